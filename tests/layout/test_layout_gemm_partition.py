"""GemmWarpPolicy partitioning (as published) and block accumulator fragments."""
import pytest

import tilelang.layout as TL
from tilelang.layout.gemm_partition import compute_warp_partition, make_mma_accumulator_fragment


@pytest.mark.parametrize("M,N,warps,policy,inst,expect", [
    (64, 64, 4, "Square", "mma", (2, 2)),
    (128, 128, 8, "Square", "mma", (2, 4)),
    (128, 128, 4, "FullRow", "mma", (4, 1)),
    (128, 128, 4, "FullCol", "mma", (1, 4)),
    (16, 128, 4, "Square", "mma", (1, 4)),
    (128, 256, 8, "Square", "wgmma", (4, 2)),
    (64, 256, 4, "FullCol", "wgmma", (4, 1)),
    (256, 128, 8, "FullRow", "wgmma", (8, 1)),
    (64, 64, 4, "Square", "fma", (1, 4)),
])
def test_partition(M, N, warps, policy, inst, expect):
    assert compute_warp_partition(M, N, warps, policy, inst) == expect


def test_policy_enum_accepted():
    from tilelang.language import GemmWarpPolicy
    assert compute_warp_partition(128, 128, 4, GemmWarpPolicy.FullRow) == (4, 1)
    assert compute_warp_partition(128, 128, 4, 2) == (1, 4)


def test_partition_errors():
    with pytest.raises(ValueError, match="no warp partition"):
        compute_warp_partition(16, 8, 4)
    with pytest.raises(ValueError, match="128 threads"):
        compute_warp_partition(64, 64, 2, instruction="wgmma")


def test_2x2_warps_over_64x64():
    C = TL.make_gemm_accumulator_fragment(64, 64, 128, "Square")
    assert C.thread_extent == 128 and C.num_slots == 32 and C.is_bijective_up_to_replication()
    # published tiling: the 16x8 atom goes over the 2x2 warps first (warp = m + 2 n)
    assert C.map(16, 0)[0] == 32 and C.map(0, 8)[0] == 64
    assert C.map(32, 0) == (0, 4) and C.map(0, 16) == (0, 8)


def mma_acc_layout_header(M, N, WM, WN, tid, r):
    # tl::MmaAccLayout<M, N, WM, WN> from backend/cuda/include/tl_cuda/mma.h, in Python
    WTM, WTN = M // WM, N // WN
    NI = WTN // 8
    lane, w = tid & 31, tid >> 5
    wr, wc, mi, ni = w // WN, w % WN, (r >> 2) // NI, (r >> 2) % NI
    return (wr * WTM + mi * 16 + (lane >> 2) + ((r >> 1) & 1) * 8, wc * WTN + ni * 8 + (lane & 3) * 2 + (r & 1))


@pytest.mark.parametrize("M,N,WM,WN", [(64, 64, 2, 2), (128, 128, 2, 4), (128, 64, 4, 1), (32, 128, 1, 4)])
def test_contiguous_style_matches_cuda_header(M, N, WM, WN):
    C = make_mma_accumulator_fragment(M, N, WM, WN, style="contiguous")
    assert C.is_bijective_up_to_replication()
    for tid in range(0, 32 * WM * WN, 3):
        for r in range(C.num_slots):
            assert C.map(*mma_acc_layout_header(M, N, WM, WN, tid, r)) == (tid, r)


@pytest.mark.parametrize("M,N,K,WM,WN,bits", [(64, 64, 32, 2, 2, 16), (128, 128, 64, 2, 2, 8), (64, 64, 16, 4, 1, 16)])
def test_a_fragment_replicated_over_n_warps(M, N, K, WM, WN, bits):
    A = TL.make_mma_a_fragment(M, N, K, WM, WN, bits)
    assert A.replicate_size == WN and A.thread_extent == 32 * WM * WN
    assert A.is_bijective_up_to_replication()


@pytest.mark.parametrize("M,N,threads,policy", [(64, 64, 128, "Square"), (128, 128, 256, "Square"),
                                                (128, 256, 256, "FullRow"), (64, 128, 128, "FullCol")])
def test_every_accumulator_is_bijective(M, N, threads, policy):
    for inst in ("mma", "wgmma"):
        C = TL.make_gemm_accumulator_fragment(M, N, threads, policy, inst)
        assert C.thread_extent == threads and C.num_slots * threads == M * N
        assert C.is_bijective_up_to_replication()
