"""Our kernels inside a `torch.cuda.graph` capture: the launcher launches on torch's
current stream, so a capture records them, and replays run them with the arguments of
the capture (torch's graph-private pool holds out_idx outputs). A one-launch replay is
how a caller gets below the driver's per-launch cost (benchmarks/results/README.md)."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda import kernels as K

pytestmark = pytest.mark.gpu


def _inc():
    @T.prim_func
    def inc(A: T.Tensor((1024,), "float32")):
        with T.Kernel(8, threads=128) as bx:
            for i in T.Parallel(128):
                A[bx * 128 + i] = A[bx * 128 + i] + 1.0
    return inc


def test_in_place_kernel_replays():
    import torch
    k = tilelang.compile(_inc(), target="cuda")
    a = torch.zeros(1024, device="cuda")
    k(a)   # warm-up outside the capture (module load, fast paths)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        k(a)
        k(a)
    torch.cuda.synchronize()
    assert bool((a == 1).all())      # capturing ran nothing
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    assert bool((a == 7).all()), a[:8]


def test_gemm_with_output_allocation_and_tensor_maps_replays():
    import torch
    k = tilelang.compile(K.gemm(512, 512, 512, bm=128, bn=128, bk=64, threads=256, stages=3), out_idx=[-1],
                         target="cuda")
    a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    k(a, b)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        c = k(a, b)
    a.copy_(torch.randn_like(a))     # replays read the captured buffers' current contents
    g.replay()
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    assert float((c.float() - ref).norm() / ref.norm()) < 1e-3
