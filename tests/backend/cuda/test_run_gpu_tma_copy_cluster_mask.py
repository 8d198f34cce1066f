"""GPU: T.tma_copy(..., cluster_mask=m) over a ring of barriers cycled under both
parities (the published test_tma_copy_cluster_mask_multicast), checked against torch:
every block of the cluster receives every tile. With TILELANG_CUDA_TMA_COPY=1 the copies
are bulk tensor copies and the mask's lowest-ranked block multicasts them
(ops/tma_pipeline.py `emit_tma_copy`; mask 0b10: rank 1 multicasts to itself, rank 0
outside the mask loads its own tile); without it, each block's cp.async on its barrier."""
import pytest

import tilelang
from tests.transform.test_lower_cluster_mask import multicast_ring

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("tma", ["0", "1"])
@pytest.mark.parametrize("mask", [0b11, 0b10, None])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_every_block_of_the_mask_receives_every_tile(tma, mask, dtype, monkeypatch):
    import torch
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("thread-block clusters need sm_90")
    monkeypatch.setenv("TILELANG_CUDA_TMA_COPY", tma)
    iters = 8
    kernel = tilelang.compile(multicast_ring(iters=iters, slots=4, mask=mask, dtype=dtype), out_idx=[1],
                              target="cuda")
    src = kernel.get_kernel_source()
    assert ("tl::tma_load_multicast(" in src) == (tma == "1" and mask is not None)
    assert ("tl::tma_load_3d(" in src) == (tma == "1" and mask != 0b11)
    torch.manual_seed(0)
    A = torch.randn(iters, 64, 64, device="cuda", dtype=getattr(torch, dtype))
    for _ in range(3):   # (a stale slot or a wrong parity shows up as a mismatch or a hang)
        B = kernel(A)
        torch.cuda.synchronize()
        for rank in range(2):
            torch.testing.assert_close(B[rank], A, rtol=0, atol=0)


@pytest.mark.parametrize("tma", ["0", "1"])
def test_a_swizzled_ring_filled_by_tma_copy_feeds_wgmma(tma, monkeypatch):
    import torch
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA and wgmma need sm_90")
    from tests.backend.cuda.ops.test_tma_copy_bulk import swizzled_ring
    monkeypatch.setenv("TILELANG_CUDA_TMA_COPY", tma)
    n = 4
    kernel = tilelang.compile(swizzled_ring(n=n), target="cuda")
    assert ("tl::tma_load_2d(" in kernel.get_kernel_source()) == (tma == "1")
    torch.manual_seed(0)
    Q = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    K = torch.randn(n * 64, 64, device="cuda", dtype=torch.float16)
    O = torch.empty(64, 64, device="cuda", dtype=torch.float32)
    kernel(Q, K, O)
    ref = sum(Q.float() @ K[i * 64:(i + 1) * 64].float().T for i in range(n))
    torch.testing.assert_close(O, ref, rtol=1e-2, atol=1e-2)
