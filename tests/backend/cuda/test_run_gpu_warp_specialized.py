"""GPU: hand-written warp-specialized kernels (thread ranges + mbarriers) against torch."""
import pytest

import tilelang
from tests.backend.cuda.kernels_ws import ws_gemm, ws_cp_async_sum

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("M,N,K", [(256, 256, 512), (384, 640, 1024), (200, 130, 256)])
def test_ws_gemm_gpu(M, N, K):
    import torch
    kern = tilelang.compile(ws_gemm(M, N, K), target="cuda")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    nb = (N + 127) // 128
    r = torch.empty(M, nb, device="cuda", dtype=torch.float32)
    kern(a, b, c, r)
    ref = torch.relu(a.float() @ b.float())
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=5e-2)
    rmax = torch.stack([ref[:, j * 128:(j + 1) * 128].amax(dim=1) for j in range(nb)], dim=1)
    torch.testing.assert_close(r, rmax, rtol=1e-2, atol=5e-2)


def test_ws_cp_async_sum_gpu():
    import torch
    n = 512
    kern = tilelang.compile(ws_cp_async_sum(n), target="cuda")
    x = torch.randn(n, 128, device="cuda", dtype=torch.float32)
    s = torch.empty(n, device="cuda", dtype=torch.float32)
    kern(x, s)
    torch.testing.assert_close(s, x.sum(dim=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tma", ["0", "1"])
@pytest.mark.parametrize("M,N,K", [(1024, 1024, 1024), (768, 512, 640), (1000, 700, 512)])
def test_ws_gemm_tma_gpu(M, N, K, tma, monkeypatch):
    import torch
    monkeypatch.setenv("TILELANG_CUDA_TMA_COPY", tma)
    from tests.backend.cuda.kernels_ws import ws_gemm_tma
    kern = tilelang.compile(ws_gemm_tma(M, N, K), target="cuda")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    kern(a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-1)
