"""GPU: thread-block clusters (ranks, the cluster barrier, remote mbarrier arrivals,
distributed shared memory), the grid barrier (cooperative launch) and programmatic
dependent launch, checked on results. Kernels: cluster_kernels.py (compiled for
sm_90a without a GPU in test_cluster_launch.py)."""
import pytest

import tilelang
from tests.backend.cuda import cluster_kernels as CK

pytestmark = pytest.mark.gpu


def _sm90():
    import torch
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("thread-block clusters and griddepcontrol need sm_90")


@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_block_rank_in_cluster_1d(cluster):
    import torch
    _sm90()
    k = tilelang.compile(CK.cluster_rank((128, 1), (cluster, 1, 1)), out_idx=-1, target="cuda")
    out = k()
    ref = (torch.arange(128, dtype=torch.int32, device="cuda") % cluster).reshape(1, 128)
    assert torch.equal(out, ref)


def test_block_rank_in_cluster_2d():
    import torch
    _sm90()
    k = tilelang.compile(CK.cluster_rank((8, 4), (2, 2, 1), published_form=False), out_idx=-1, target="cuda")
    out = k()
    by, bx = torch.meshgrid(torch.arange(4), torch.arange(8), indexing="ij")
    ref = ((bx % 2) + (by % 2) * 2).to(torch.int32).cuda()   # %cluster_ctarank: x fastest
    assert torch.equal(out, ref)


def test_cluster_of_16_blocks():
    import torch
    _sm90()
    k = tilelang.compile(CK.cluster_rank((128, 1), (16, 1, 1)), out_idx=-1, target="cuda")
    out = k()
    assert torch.equal(out, (torch.arange(128, dtype=torch.int32, device="cuda") % 16).reshape(1, 128))


def test_dynamic_grid_of_clusters_and_a_partial_one():
    import torch
    from tilelang.backend.cuda.host.runtime import CudaRuntimeError
    _sm90()
    k = tilelang.compile(CK.cluster_rank_dynamic(), target="cuda")
    out = torch.full((10,), -1, dtype=torch.int32, device="cuda")
    k(out)
    assert out.tolist() == [0, 1] * 5
    with pytest.raises(CudaRuntimeError, match="not a multiple of 2"):
        k(torch.zeros(7, dtype=torch.int32, device="cuda"))
    torch.cuda.synchronize()   # nothing was launched: the context is still usable
    k(out)
    assert out.tolist() == [0, 1] * 5


def test_remote_arrive_on_rank_zero_barrier():
    import torch
    _sm90()
    k = tilelang.compile(CK.remote_arrive(), out_idx=-1, target="cuda")
    out = k()
    torch.cuda.synchronize()
    assert out.tolist() == [r % 4 + 1 for r in range(128)]


@pytest.mark.parametrize("mode", ["bulk", "simt", "simt_barrier", "arrive"])
def test_blocks_swap_tiles_through_distributed_shared_memory(mode):
    import torch
    _sm90()
    func = CK.dsmem_swap(N=256, mode=mode, clusters=4)
    k = tilelang.compile(func, out_idx=[1], target="cuda")
    shape = (8, 8, 32) if mode == "simt_barrier" else (8, 1, 256)
    a = torch.arange(8 * 256, dtype=torch.float32, device="cuda").reshape(shape)
    for _ in range(3):   # repeated: barrier phases and initialisation every launch
        out = k(a)
        partner = torch.arange(8, device="cuda") ^ 1
        torch.testing.assert_close(out, a[partner] * 2, rtol=0, atol=0)


def test_sync_grid_two_phases_through_global_memory():
    import torch
    k = tilelang.compile(CK.grid_two_phase(blocks=64, width=256), target="cuda")
    assert k.launcher.meta["kernels"][0]["cooperative"]
    a = torch.randn(64, 256, device="cuda")
    for _ in range(5):
        b = torch.zeros_like(a)
        c = torch.zeros_like(a)
        k(a, b, c)
        torch.testing.assert_close(b, a + 1)
        torch.testing.assert_close(c, (a + 1).flip(0) * 3)


def test_sync_grid_as_published():
    import torch
    N = 1024
    k = tilelang.compile(CK.grid_sync_published(N), target="cuda")
    assert "cooperative_groups::this_grid().sync()" in k.get_kernel_source()
    t = torch.rand(N, dtype=torch.float32, device="cuda")
    k(t)
    torch.testing.assert_close(t, torch.full_like(t, N - 1))


def test_sync_grid_with_a_dynamic_grid_and_one_too_large():
    import torch
    from tilelang.backend.cuda.host.runtime import CudaRuntimeError
    k = tilelang.compile(CK.grid_sync_dynamic(), target="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    n = 2 * sms
    a = torch.randn(n, 128, device="cuda")
    a0 = a.clone()
    b = torch.zeros_like(a)
    k(a, b)
    torch.testing.assert_close(b, a0 * 2)
    torch.testing.assert_close(a, (a0 * 2).flip(0))
    big = 64 * sms   # far more 128-thread blocks than the SMs hold at once (at most 16 per SM)
    with pytest.raises(CudaRuntimeError, match=r"T\.sync_grid\(\).*this GPU holds at most"):
        k(torch.zeros(big, 128, device="cuda"), torch.zeros(big, 128, device="cuda"))
    torch.cuda.synchronize()


def test_pdl_pair_gives_the_right_result():
    import torch
    _sm90()
    k = tilelang.compile(CK.pdl_pair(blocks=128, width=1024, spin=200), target="cuda")
    assert [m["pdl"] for m in k.launcher.meta["kernels"]] == [False, True]
    a = torch.randint(-100, 100, (128, 1024), device="cuda").float()
    for _ in range(10):
        b, c, d = torch.zeros_like(a), torch.zeros_like(a), torch.zeros_like(a)
        k(a, b, c, d)
        torch.testing.assert_close(b, a * 2, rtol=0, atol=0)
        torch.testing.assert_close(c, a * 2 + 1, rtol=0, atol=0)
        torch.testing.assert_close(d, a - 1, rtol=0, atol=0)


def test_pdl_pair_behind_other_work_on_the_stream():
    """A short first kernel behind a matmul on the same stream: the second kernel
    (launched to overlap it) still reads the first one's output."""
    import torch
    _sm90()
    k = tilelang.compile(CK.pdl_pair(blocks=128, width=1024, spin=1), target="cuda")
    a = torch.randint(-100, 100, (128, 1024), device="cuda").float()
    for _ in range(10):
        b, c, d = torch.zeros_like(a), torch.zeros_like(a), torch.zeros_like(a)
        big = torch.randn(2048, 2048, device="cuda")
        big = big @ big   # a kernel in front on the stream
        k(a, b, c, d)
        torch.testing.assert_close(c, a * 2 + 1, rtol=0, atol=0)
    torch.cuda.synchronize()


def test_general_launch_path_with_launch_attributes():
    """The launcher's general path (cuda-bindings' cuLaunchKernelEx) for a cooperative
    kernel and a PDL pair, as used for workspaces, DLPack arrays and errors."""
    import torch
    _sm90()
    k = tilelang.compile(CK.grid_two_phase(blocks=32, width=128), target="cuda")
    a = torch.randn(32, 128, device="cuda")
    b, c = torch.zeros_like(a), torch.zeros_like(a)
    k.launcher._general([a, b, c], (), ())
    torch.testing.assert_close(c, (a + 1).flip(0) * 3)
    k = tilelang.compile(CK.pdl_pair(blocks=16, width=256, spin=50), target="cuda")
    a = torch.randint(-100, 100, (16, 256), device="cuda").float()
    b, c, d = torch.zeros_like(a), torch.zeros_like(a), torch.zeros_like(a)
    k.launcher._general([a, b, c, d], (), ())
    torch.testing.assert_close(c, a * 2 + 1, rtol=0, atol=0)
    torch.testing.assert_close(d, a - 1, rtol=0, atol=0)
