"""An epilogue's staging tile (`T.copy(C_local, C_shared); T.copy(C_shared, C[...])`) in
the 128-byte swizzle (plan/kernel.py `_store_staging_tiles`), stored by one TMA box per
64-column strip (ops/tma_store.py `TmaStore.strips`): the accumulator's pair stores into
it are bank-conflict free, where a row-major 128-column tile put the 8 rows of a warp's
store into the same 4 banks."""
import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build, sass_ops
from tests.backend.cuda.plan.test_plan_kernels import _lower_to, _launch
from tilelang.backend.cuda.plan.plan_kernels import plan_kernels, kernel_plan


def staged_gemm(M=256, N=256, K=256, bM=128, bN=128, bK=32, threads=128, staged=True, fill=False):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_l = T.alloc_fragment((bM, bN), "float32")
            C_s = T.alloc_shared((bM, bN), "float16")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_l)
            if fill:   # a tile also filled from global memory is not only a staging tile
                T.copy(C[by * bM, bx * bN], C_s)
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * bM, bx * bN])
    return main


def _placement(func, name, arch="sm_90a"):
    _, after, _ = _lower_to(func, plan_kernels, arch)
    plan = kernel_plan(_launch(after))
    (p,) = [p for i, p in plan.placements.items() if getattr(p, "kind", "") == "smem" and
            any(getattr(b, "name", "") == name and id(b) == i for b in _buffers(after))]
    return p


def _buffers(func):
    from tilelang.ir.visitor import walk
    from tilelang.ir import stmt as S
    out = []
    walk(func.body, lambda n: out.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    return out


def test_the_staging_tile_takes_the_128_byte_swizzle():
    assert _placement(staged_gemm(), "C_s").swizzle == 128
    # filled from global memory too, or on a target without bulk stores: row-major as before
    assert _placement(staged_gemm(fill=True), "C_s").swizzle == 0
    assert _placement(staged_gemm(), "C_s", arch="sm_80").swizzle == 0


@pytest.mark.parametrize("threads", [128, 256])
def test_pair_stores_into_it_are_conflict_free(threads):
    """Bank of every lane's 32-bit store for each register pair of the accumulator:
    32 different banks per warp with the swizzle, 4 banks (8-way) row-major."""
    from tilelang.backend.cuda.layout.fragment import AccLayout
    from tilelang.layout import make_full_bank_swizzled_layout
    rows = cols = 128
    sw = make_full_bank_swizzled_layout(_buffers(staged_gemm())[-1]).offsets()   # C_s: 128 x 128 fp16
    acc = AccLayout(rows, cols, 4 * (threads // 128), 1)
    for warp in range(threads // 32):
        for r in range(0, acc.regs, 2):
            cells = [(acc.row(32 * warp + lane, r), acc.col(32 * warp + lane, r)) for lane in range(32)]
            banks = [int(sw[i, j]) * 2 // 4 % 32 for i, j in cells]
            plain = [(i * cols + j) * 2 // 4 % 32 for i, j in cells]
            assert len(set(banks)) == 32, (warp, r, banks)
            assert len(set(plain)) == 4


@needs_nvrtc
def test_the_store_is_one_box_per_strip():
    art = build(staged_gemm())
    src = art.source
    assert "tl::store_pair(&C_s[tl::sw128<128>(" in src, src
    assert src.count("tl::tma_store(&C_desc, C_s") == 2 and "C_s + 8192, ((bx * 128) + 64)" in src, src
    (spec,) = [t for t in art.meta["kernels"][0]["tmaps"] if t["buffer"] == 2]
    assert spec["box"] == [64, 128] and spec["swizzle"] == 3, spec
    from tests.backend.cuda.conftest import sass_tools
    if sass_tools():   # (one build for both: NVRTC compiles here, cuobjdump reads the SASS)
        ops = sass_ops(art)
        assert ops["UTMASTG"] == 2 and ops["HGMMA"] >= 4, ops
        assert ops["STL"] == 0 and ops["LDL"] == 0, ops


@pytest.mark.gpu
@pytest.mark.parametrize("threads", [128, 256])
@pytest.mark.parametrize("M,N,K", [(256, 256, 256), (200, 192, 128)])
def test_staged_epilogue_on_gpu(M, N, K, threads):
    import torch
    import tilelang
    kern = tilelang.compile(staged_gemm(M, N, K, threads=threads), out_idx=[-1], target="cuda")
    assert "tl::sw128<128>" in kern.get_kernel_source()
    torch.manual_seed(2)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(kern(a, b).float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)
