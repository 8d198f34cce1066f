"""plan/kernel.py: which shared buffers share storage. A buffer's lifetime covers every statement
that names it, also where it is read only inside an expression (`s1[i, j] + s2[i, j]`: a
wrong result when two tiles read together got one storage); `TILELANG_CUDA_SMEM_SHARING_L1`
(on by default) lets a straight-line kernel without gemms share storage at the same blocks an SM when
that needs a smaller shared-memory carveout (the published elementwise example's output tile
over its first input's, as the published package places them).
CPU: the plan's placements and report; GPU: the kernels against torch."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.helpers import plan_of
from tests.backend.cuda.plan.test_private_barriers import elementwise as _elementwise
from tilelang.backend.cuda.target import smem_carveout_bytes


def elementwise():
    """The published example_elementwise_add's kernel (32 x 32 float tiles, 128 threads) on
    1024 x 1024: 1024 blocks, more than the SMs."""
    return _elementwise(size=1024)


def _plan(func):
    """(plan, {shared buffer name: Placement})."""
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    plan, launch = plan_of(func)
    decls = []
    walk(launch.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    return plan, {b.name: plan.placements[id(b)] for b in decls if b.scope.startswith("shared")}


def _span(p):
    return p.offset, p.offset + p.stage_bytes * p.stages


def _overlap(a, b):
    (lo1, hi1), (lo2, hi2) = _span(a), _span(b)
    return lo1 < hi2 and lo2 < hi1


def read_together(third_rows=64, grid_rows=32):
    """Two 64 KB tiles read together by one expression (never stored by it), then a third tile
    (`third_rows` x 256 floats) used after them. 128 threads, `grid_rows` x 8 blocks."""
    M, N = 64 * grid_rows, 256 * 8

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32"),
             D: T.Tensor((M, N), "float32"), E: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 256, M // 64, threads=128) as (bx, by):
            s1 = T.alloc_shared((64, 256), "float32")
            s2 = T.alloc_shared((64, 256), "float32")
            s3 = T.alloc_shared((third_rows, 256), "float32")
            T.copy(A[by * 64, bx * 256], s1)
            T.copy(B[by * 64, bx * 256], s2)
            for i, j in T.Parallel(64, 256):
                C[by * 64 + i, bx * 256 + j] = s1[i, j] * 2.0 + s2[i, j]
            T.copy(D[by * 64, bx * 256], s3[0:64, :])
            T.copy(s3[0:64, :], E[by * 64, bx * 256])
    return main


def test_tiles_read_only_inside_an_expression_keep_their_own_storage():
    # 256 KB apart: storage must be shared; s3 may take s1's or s2's place, never s1 s2's
    _, smem = _plan(read_together(third_rows=128))
    assert not _overlap(smem["s1"], smem["s2"]), smem
    assert _overlap(smem["s3"], smem["s1"]) or _overlap(smem["s3"], smem["s2"])


def test_sharing_for_more_blocks_keeps_tiles_read_together_apart(monkeypatch):
    # 192 KB apart, one block an SM: sharing s3 with s1 (128 KB) still leaves one, so nothing
    # is shared for occupancy (had s1 and s2 shared too, 64 KB would have given three blocks)
    monkeypatch.setenv("TILELANG_CUDA_SMEM_SHARING_L1", "0")
    plan, smem = _plan(read_together(third_rows=64))
    assert not plan.smem_shared_for_occupancy
    assert not any(_overlap(smem[a], smem[b]) for a, b in (("s1", "s2"), ("s1", "s3"), ("s2", "s3"))), smem
    # by default s3 takes s1's storage for L1 (one block in a 132 KB carveout, not 196 KB); s1, s2 stay apart
    monkeypatch.delenv("TILELANG_CUDA_SMEM_SHARING_L1")
    plan, smem = _plan(read_together(third_rows=64))
    assert "132 KB shared carveout instead of 196 KB" in plan.smem_shared_for_occupancy
    assert not _overlap(smem["s1"], smem["s2"]) and (_overlap(smem["s3"], smem["s1"]) or _overlap(smem["s3"], smem["s2"]))


def test_carveout_steps():
    assert smem_carveout_bytes("sm_90a", 0) == 0
    assert smem_carveout_bytes("sm_90a", 16 * 13 * 1024) == 228 * 1024   # 16 blocks of 12 KB (+1 reserved)
    assert smem_carveout_bytes("sm_90a", 16 * 9 * 1024) == 164 * 1024    # ... of 8 KB
    assert smem_carveout_bytes("sm_80", 100 * 1024 + 1) == 132 * 1024


def test_elementwise_output_tile_takes_an_input_tiles_storage_for_l1(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_SMEM_SHARING_L1", "0")
    plan, smem = _plan(elementwise())
    assert not plan.smem_shared_for_occupancy and plan.smem_bytes == 3 * 4096   # switched off: apart
    monkeypatch.delenv("TILELANG_CUDA_SMEM_SHARING_L1")
    plan, smem = _plan(elementwise())
    assert plan.smem_bytes == 2 * 4096
    assert not _overlap(smem["A_shared"], smem["B_shared"])
    assert _overlap(smem["C_shared"], smem["A_shared"]) or _overlap(smem["C_shared"], smem["B_shared"])
    assert "164 KB shared carveout instead of 228 KB" in plan.smem_shared_for_occupancy


def test_l1_sharing_leaves_gemm_kernels_alone():
    # the same tiles of 64 x 64 floats: 16 KB each, 8 blocks of 128 threads (would need 164 KB ->
    # 132 KB); with a T.gemm in the kernel nothing is shared
    M = N = K = 512

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 64, M // 64, threads=128) as (bx, by):
            As = T.alloc_shared((64, K), "float16")
            Bs = T.alloc_shared((K, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            Cs = T.alloc_shared((64, 64), "float32")
            T.copy(A[by * 64, 0], As)
            T.copy(B[0, bx * 64], Bs)
            T.clear(acc)
            T.gemm(As, Bs, acc)
            T.copy(acc, Cs)
            T.copy(Cs, C[by * 64, bx * 64])
    plan, smem = _plan(gemm)
    assert not plan.smem_shared_for_occupancy
    assert not any(_overlap(smem["Cs"], smem[b]) for b in ("As", "Bs")), smem


@pytest.mark.gpu
def test_read_together_runs_correctly_on_gpu():
    import torch
    kern = tilelang.compile(read_together(third_rows=64, grid_rows=32), target="cuda")
    a, b, d = (torch.randn(64 * 32, 2048, device="cuda") for _ in range(3))
    c, e = torch.empty_like(a), torch.empty_like(a)
    kern(a, b, c, d, e)
    torch.testing.assert_close(c, a * 2 + b)
    torch.testing.assert_close(e, d)


@pytest.mark.gpu
@pytest.mark.parametrize("on", ["0", "1"])
def test_elementwise_runs_correctly_on_gpu(monkeypatch, on):
    import torch
    monkeypatch.setenv("TILELANG_CUDA_SMEM_SHARING_L1", on)
    kern = tilelang.compile(elementwise(), target="cuda")
    a, b = torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda")
    c = torch.empty_like(a)
    kern(a, b, c)
    torch.testing.assert_close(c, a + b)
