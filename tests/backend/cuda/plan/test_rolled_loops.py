"""plan/rolled_loops.py: a serial loop that issues wgmma stays rolled (`#pragma unroll 1`).
Unrolled, ptxas merged the HGMMAs of two iterations that read the same descriptors on a
cleared accumulator, though the buffer behind them had been refilled: the differential
fuzzer's GemmChain seed 47752446 (S = Q K^T cleared every iteration on two warpgroups of
64 x 16, `num_stages=1`, 4 iterations) stored iteration 0's S for iteration 1 on the H200."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build
from tests.backend.cuda.plan.around import around
from tilelang.backend.cuda.plan.rolled_loops import plan_rolled_loops


def gemm_chain(nk=128, stages=1, threads=256):
    @T.prim_func
    def main(Q: T.Tensor((64, 64), "float16"), K: T.Tensor((nk, 64), "float16"), V: T.Tensor((nk, 64), "float16"),
             O: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            Q_s = T.alloc_shared((64, 64), "float16")
            K_s = T.alloc_shared((32, 64), "float16")
            V_s = T.alloc_shared((32, 64), "float16")
            S_f = T.alloc_fragment((64, 32), "float32")
            P_f = T.alloc_fragment((64, 32), "float16")
            O_f = T.alloc_fragment((64, 64), "float32")
            T.copy(Q[0, 0], Q_s)
            T.clear(O_f)
            for k in T.Pipelined(nk // 32, num_stages=stages):
                T.copy(K[k * 32, 0], K_s)
                T.clear(S_f)
                T.gemm(Q_s, K_s, S_f, transpose_B=True, policy=T.GemmWarpPolicy.Square)
                for i, j in T.Parallel(64, 32):
                    S_f[i, j] = S_f[i, j] * T.float32(0.5)
                T.copy(S_f, P_f)
                T.copy(V[k * 32, 0], V_s)
                T.gemm(P_f, V_s, O_f, policy=T.GemmWarpPolicy.Square)
            T.copy(O_f, O[0, 0])
    return main


def _around_the_pass(func):
    return around(func, plan_rolled_loops)


def test_the_loop_issuing_wgmma_is_marked_rolled():
    before, after = _around_the_pass(gemm_chain())
    assert "# rolled:" not in before
    marked = [ln.strip() for ln in after.splitlines() if "# rolled:" in ln]
    assert len(marked) == 1 and marked[0].startswith("for k") and "T.serial(4)" in marked[0], marked


def test_a_loop_without_wgmma_is_left_alone():
    # on 64 threads no gemm is a wgmma (no whole warpgroup): nothing is marked
    _, after = _around_the_pass(gemm_chain(threads=64))
    assert "# rolled:" not in after and "T.serial(4)" in after


def test_a_gemm_k_loop_accumulating_across_iterations_keeps_unrolling():
    @T.prim_func
    def gemm(A: T.Tensor((128, 256), "float16"), B: T.Tensor((256, 128), "float16"), C: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            acc = T.alloc_fragment((128, 128), "float32")
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=1):
                T.copy(A[0, k * 64], A_s)
                T.copy(B[k * 64, 0], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C)
    _, after = _around_the_pass(gemm)
    assert "wgmma" in after and "# rolled:" not in after


@needs_sass
def test_every_iteration_scales_its_own_products():
    """In the SASS the loop keeps one body: 4 HGMMAs of m64n16 and the 8 multiplies by 0.5
    of its accumulator (unrolled, one iteration had 4, the other 4 reused)."""
    from tilelang.backend.cuda.host.nvrtc import sass
    art = build(gemm_chain())
    assert "#pragma unroll 1" in art.source
    text = sass(art.binary)
    assert text.count("HGMMA.64x16x16") == 4
    assert len(re.findall(r"FMUL(?:\.FTZ)? R\d+, R\d+, 0\.5", text)) == 8


@pytest.mark.gpu
@pytest.mark.parametrize("nk,stages", [(128, 1), (64, 1), (256, 2)])
def test_gemm_chain_matches_numpy(nk, stages):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    torch.manual_seed(0)
    q, k, v = (torch.randn(r, 64, device="cuda").half() for r in (64, nk, nk))
    o = torch.zeros(64, 64, device="cuda")
    tilelang.compile(gemm_chain(nk, stages), target="cuda")(q, k, v, o)
    ref = np.zeros((64, 64))
    qn, kn, vn = (x.float().cpu().numpy().astype(np.float64) for x in (q, k, v))
    for i in range(nk // 32):
        s = (qn @ kn[i * 32:(i + 1) * 32].T * 0.5).astype(np.float16).astype(np.float64)
        ref += s @ vn[i * 32:(i + 1) * 32]
    np.testing.assert_allclose(o.cpu().numpy(), ref, rtol=2e-2, atol=5e-2)
