import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.expr import IntImm, Var
from tilelang.ir.visitor import substitute
from tilelang.arith.simplify import simplify
from tilelang.transform.rasterize_blocks import remap


@pytest.mark.parametrize("gx,gy,panel,order", [(8, 8, 4, "row"), (5, 7, 3, "row"), (6, 4, 10, "row"),
                                               (7, 5, 2, "col")])
def test_remap_is_a_permutation(gx, gy, panel, order):
    hx, hy = Var("hx"), Var("hy")
    nx, ny = remap(hx, hy, IntImm(gx), IntImm(gy), panel, order)
    seen = set()
    for y in range(gy):
        for x in range(gx):
            m = {hx: IntImm(x), hy: IntImm(y)}
            seen.add((simplify(substitute(nx, m)).value, simplify(substitute(ny, m)).value))
    assert seen == {(x, y) for x in range(gx) for y in range(gy)}


def test_swizzled_gemm_is_still_correct():
    M, N, K = 200, 136, 64

    @T.prim_func
    def mm(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 32)) as (bx, by):
            T.use_swizzle(panel_size=3)
            a = T.alloc_shared((32, 32), "float32")
            b = T.alloc_shared((32, 32), "float32")
            c = T.alloc_fragment((32, 32), "float32")
            T.clear(c)
            for k in T.serial(K // 32):
                T.copy(A[by * 32, k * 32], a)
                T.copy(B[k * 32, bx * 32], b)
                T.gemm(a, b, c)
            T.copy(c, C[by * 32, bx * 32])
    kern = tilelang.compile(mm, out_idx=[-1], target="cpu")
    assert "rasterize" not in kern.get_kernel_source()  # plain code, remapped indices
    x = np.random.rand(M, K).astype(np.float32)
    y = np.random.rand(K, N).astype(np.float32)
    from tests.tf32 import tf32   # a float32 gemm is a TF32 gemm
    np.testing.assert_allclose(kern(x, y), tf32(x).astype(np.float64) @ tf32(y), rtol=1e-4)


def test_block_indices_are_bound_once_not_substituted():
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk, collect_vars
    from tilelang.transform.rasterize_blocks import rasterize_blocks, BLOCK_REMAP

    @T.prim_func
    def f(A: T.Tensor((256, 256), "float32"), C: T.Tensor((256, 256), "float32")):
        with T.Kernel(8, 8) as (bx, by):
            T.use_swizzle(panel_size=4)
            for i, j in T.Parallel(32, 32):
                C[by * 32 + i, bx * 32 + j] = A[by * 32 + i, bx * 32 + j]
    launches = []
    walk(rasterize_blocks(f).body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    (k,) = launches
    remap = k.annotations[BLOCK_REMAP]
    assert [v.name for v in k.block_vars] == ["bx", "by"] and "swizzle" not in k.annotations
    assert [v.name for v in remap.hw_vars] == ["bx_hw", "by_hw"]
    body_vars = {id(v) for v in collect_vars(k.body)}
    assert not body_vars & {id(v) for v in remap.hw_vars}        # the body reads bx, by only
    for e in remap.exprs:
        assert {x.name for x in collect_vars(e)} <= {"bx_hw", "by_hw"}
    # the bindings are the permutation `remap` describes
    hx, hy = remap.hw_vars
    ex, ey = remap.exprs
    seen = set()
    for y in range(8):
        for x in range(8):
            m = {hx: IntImm(x), hy: IntImm(y)}
            seen.add((simplify(substitute(ex, m)).value, simplify(substitute(ey, m)).value))
    assert seen == {(x, y) for x in range(8) for y in range(8)}
