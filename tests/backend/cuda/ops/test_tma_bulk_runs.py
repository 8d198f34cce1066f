"""ops/tma.py `_bulk_run`: a pipelined row-major tile that one contiguous run of its tensor
fills (a row of attention backward's log-sum-exp beside the Q and dO tiles) joins the TMA
ring as one plain bulk copy (`tl::tma_load_bulk`, no tensor map), so the whole loop runs on
the ring (and, where plan/warp_specialize.py finds it, gets a producer warpgroup) instead
of falling back to cp.async for every copy. Only where the body's gemms all run on wgmma
(where a producer warpgroup may take the loop): attention backward with an mma.sync product
ran slower on the single-role ring than on cp.async (H200, 0.92 -> 0.87 of the published
package), the wgmma one faster with its producer warpgroup (0.87 -> 0.89). Runs that are not
16-byte aligned in every iteration or need a bound check (a plain bulk copy fills no zeros)
keep cp.async; TILELANG_CUDA_TMA_BULK_RUNS=0 turns it off. CPU: the plans and the code; GPU:
results against torch."""
import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build
from tests.backend.cuda.plan.test_warp_specialize import _before_after, _decision


def scaled_gemm(M, N, K, bM=64, bN=64, bK=64, run=None, offset=0, stages=2, threads=128, writes_scale=False,
                s_len=None):
    """C = sum over K tiles k of (A_k B_k^T) * s_k, column j of every block scaled by
    s[k * bN + offset + j % run]: the row of `s` (`run` elements) is loaded beside the A
    and B tiles into a shared row that the body reads after the product (as attention
    backward reads its lse row). `writes_scale`: the body also adds to the global tensor
    the row comes from (the ring's copies read what the body writes). `s_len`: the length
    of `s` (default K // bK * bN + 64)."""
    run = bN if run is None else run
    s_len = K // bK * bN + 64 if s_len is None else s_len

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), S: T.Tensor((s_len,), "float32"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bN, bK), "float16")
            s_s = T.alloc_shared((run,), "float32")
            P = T.alloc_fragment((bM, bN), "float32")
            C_l = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_l)
            for k in T.Pipelined(K // bK, num_stages=stages):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[bx * bN, k * bK], B_s)
                T.copy(S[k * bN + offset:k * bN + offset + run], s_s)
                T.clear(P)
                T.gemm(A_s, B_s, P, transpose_B=True)
                for i, j in T.Parallel(bM, bN):
                    C_l[i, j] += P[i, j] * s_s[j % run]
                if writes_scale:
                    T.atomic_add(S[s_len - 1 - bx], 1.0)
            T.copy(C_l, C[by * bM, bx * bN])
    return main


def _plan(func, config=None):
    from tests.backend.cuda.plan.around import around
    from tilelang.backend.cuda.plan.copy_forms import plan_copy_forms
    return around(func, plan_copy_forms, config=config)[1]


def test_an_aligned_row_joins_the_ring_as_one_bulk_copy():
    src = build(scaled_gemm(256, 256, 512)).source
    # one plain bulk copy of the 256-byte row into its slot, no tensor map of S
    assert "tl::tma_load_bulk(s_s + (ring_stage) * 64, S + ((ring_k * 64)), 256, &ring_full[ring_stage]);" in src, src
    assert src.count("tl::tma_prefetch_desc(") == 2 and "cp_async" not in src
    assert "tl_tid >> 7, 0) >= 1" in src   # (and a producer warpgroup: the body reads the row, plan/warp_specialize.py)
    # the slot's bytes: A and B tiles and the row
    assert f"tl::mbar_arrive_expect_tx(&ring_full[ring_stage], {2 * 64 * 64 * 2 + 256});" in src


@pytest.mark.parametrize("why, kw", [
    ("a start 8 bytes past a 16-byte boundary", dict(offset=2)),
    ("12 bytes", dict(run=3)),
])
def test_a_run_a_bulk_copy_cannot_move_keeps_cp_async(why, kw):
    src = build(scaled_gemm(256, 256, 512, **kw)).source
    assert "tma_load_bulk" not in src, why


def test_a_bound_check_keeps_cp_async():
    """The last tile's row runs 16 elements past S's end: T.copy checks the bound (a plain
    bulk copy fills no zeros)."""
    src = build(scaled_gemm(256, 256, 512, run=80, s_len=512)).source   # (the last row: 448 .. 527)
    assert "tma_load_bulk" not in src and "cp_async" in src


def test_an_mma_sync_product_keeps_cp_async():
    """This configuration's dQ product runs on mma.sync: no producer warpgroup would take
    the loop, and the single-role ring was slower than cp.async."""
    from tests.backend.cuda.kernels_attn_bwd import attention_bwd
    src = build(attention_bwd(1, 2, 256, 64, block_M=128, block_N=32, threads=256, causal=False)).source
    assert "tma_load_bulk" not in src and "cp_async" in src


def test_the_switch_turns_it_off(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_TMA_BULK_RUNS", "0")
    src = build(scaled_gemm(256, 256, 512)).source
    assert "tma_load_bulk" not in src and "cp_async" in src


def test_a_body_writing_the_rows_tensor_loads_the_row_in_the_body():
    """The body adds into S: its row is not loaded ahead (plan/pipeline.py), so neither
    the ring nor a producer warpgroup could read it before an earlier iteration's add
    (plan/warp_specialize.py `_ring_hazard` refuses such a ring too)."""
    _, after = _before_after(scaled_gemm(256, 256, 512, writes_scale=True))
    assert _decision(after) == ["none (the pipelined body does more than wgmma gemms into register accumulators)"]
    src = build(scaled_gemm(256, 256, 512, writes_scale=True)).source
    assert "tma_load_bulk" not in src and "&S[((k * 64) + i0_2)]" in src


def test_attention_backward_gets_a_producer_warpgroup():
    """Its lse and Delta rows were the only copies off the ring; its dQ atomics write a
    tensor the ring does not read."""
    from tests.backend.cuda.kernels_attn_bwd import attention_bwd
    _, after = _before_after(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128, causal=False))
    assert _decision(after) == [
        "warp-specialized loop over t: 256 threads launched, producer threads 128..255 (one elected thread "
        "issues the TMA loads of 2 slots), consumers 0..127 with named barrier 1, no register split (one "
        "consumer warpgroup); slot released after the body"]


@needs_sass
def test_the_consumers_wgmma_groups_are_not_serialized():
    """The producer's branch tests the warpgroup index broadcast from lane 0: with
    `tl_tid >= 128` ptxas serialized every wgmma of this body (C7518, "WG.DP in divergent
    path"), a wait after each of its 20 HGMMA."""
    from tests.backend.cuda.kernels_attn_bwd import attention_bwd
    from tests.backend.cuda.helpers import sass_ops
    ops = sass_ops(build(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128, causal=False)))
    assert ops["HGMMA"] == 20 and ops["WARPGROUP"] <= 10, ops


@pytest.mark.gpu
@pytest.mark.parametrize("bulk", ["1", "0"])
def test_matches_torch(monkeypatch, bulk):
    import torch
    import tilelang
    monkeypatch.setenv("TILELANG_CUDA_TMA_BULK_RUNS", bulk)
    M, N, K, bN, bK = 256, 256, 512, 64, 64
    kern = tilelang.compile(scaled_gemm(M, N, K), target="cuda")
    a = torch.randn(M, K, dtype=torch.float16, device="cuda")
    b = torch.randn(N, K, dtype=torch.float16, device="cuda")
    s = torch.rand(K // bK * bN + 64, dtype=torch.float32, device="cuda") + 0.5
    c = torch.empty(M, N, dtype=torch.float32, device="cuda")
    kern(a, b, s, c)
    ref = torch.zeros(M, N, dtype=torch.float32, device="cuda")
    for k in range(K // bK):
        t = slice(k * bK, (k + 1) * bK)
        ref += (a[:, t].float() @ b[:, t].float().T) * s[k * bN:(k + 1) * bN].repeat(N // bN)
    torch.testing.assert_close(c, ref, rtol=1e-2, atol=1e-2)
