"""GPU: T.tma_copy(..., cluster_mask=0b11) over a ring of barriers cycled under both
parities (the published test_tma_copy_cluster_mask_multicast), checked against torch:
both blocks of the cluster receive every tile."""
import pytest

import tilelang
from tests.transform.test_lower_cluster_mask import multicast_ring

pytestmark = pytest.mark.gpu


def test_every_block_of_the_mask_receives_every_tile():
    import torch
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("thread-block clusters need sm_90")
    iters = 8
    kernel = tilelang.compile(multicast_ring(iters=iters, slots=4), out_idx=[1], target="cuda")
    torch.manual_seed(0)
    A = torch.randn(iters, 64, 64, device="cuda", dtype=torch.float32)
    B = kernel(A)
    for rank in range(2):
        torch.testing.assert_close(B[rank], A)
