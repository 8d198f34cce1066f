"""T.im2col (and its old name T.c2d_im2col): implicit-GEMM convolution tiles, and
`T.Tensor(shape, dtype, buf.data)` views, against a direct convolution."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc


def conv_kernel(N, H, W, C, F, K, S, D, P, bm=64, bn=64, bk=32, old_name=False):
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    op = T.c2d_im2col if old_name else T.im2col

    @T.prim_func
    def conv(data: T.Tensor((N, H, W, C), "float16"), kernel: T.Tensor((K, K, C, F), "float16"),
             out: T.Tensor((N, OH, OW, F), "float32")):
        with T.Kernel(T.ceildiv(F, bn), T.ceildiv(N * OH * OW, bm), threads=128) as (bx, by):
            a = T.alloc_shared((bm, bk), "float16")
            b = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            kernel_flat = T.Tensor((K * K * C, F), "float16", kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), "float32", out.data)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K * K * C, bk), num_stages=2):
                op(data, a, by, k, K, S, D, P)
                T.copy(kernel_flat[k * bk, bx * bn], b)
                T.gemm(a, b, acc)
            T.copy(acc, out_flat[by * bm, bx * bn])
    return conv, (OH, OW)


def reference(x, w, S, D, P):
    """Direct NHWC convolution with a [KH, KW, C, F] filter, in float64."""
    N, H, W, C = x.shape
    K, _, _, F = w.shape
    xp = np.zeros((N, H + 2 * P, W + 2 * P, C))
    xp[:, P:P + H, P:P + W] = x
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    out = np.zeros((N, OH, OW, F))
    for kh in range(K):
        for kw in range(K):
            patch = xp[:, kh * D: kh * D + S * (OH - 1) + 1: S, kw * D: kw * D + S * (OW - 1) + 1: S]
            out += patch @ w[kh, kw]
    return out


CASES = [(2, 12, 10, 32, 64, 3, 1, 1, 1), (1, 9, 11, 16, 32, 3, 2, 2, 2), (1, 8, 8, 8, 16, 1, 1, 1, 0)]


@pytest.mark.parametrize("case", CASES)
def test_im2col_conv_cpu(case):
    N, H, W, C, F, K, S, D, P = case
    f, (OH, OW) = conv_kernel(*case, old_name=case[5] == 1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    w = rng.standard_normal((K, K, C, F)).astype(np.float16)
    out = np.zeros((N, OH, OW, F), np.float32)
    tilelang.compile(f, target="cpu")(x, w, out)
    np.testing.assert_allclose(out, reference(x.astype(np.float64), w.astype(np.float64), S, D, P),
                               rtol=1e-2, atol=1e-2)


@needs_nvrtc
def test_im2col_compiles_for_hopper():
    src = tilelang.compile(conv_kernel(*CASES[0])[0], target="cuda -arch=sm_90a").get_kernel_source()
    assert "wgmma" in src or "gemm_ss" in src


def test_im2col_wants_an_nhwc_image():
    with pytest.raises(tilelang.TileLangError, match="NHWC image"):
        @T.prim_func
        def k(x: T.Tensor((8, 8), "float16")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((8, 8), "float16")
                T.im2col(x, s, 0, 0, 3, 1, 1, 1)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES + [(4, 32, 32, 64, 128, 3, 1, 1, 1)])
def test_im2col_conv_gpu(case):
    import torch
    N, H, W, C, F, K, S, D, P = case
    f, (OH, OW) = conv_kernel(*case)
    x = torch.randn(N, H, W, C, device="cuda", dtype=torch.float16)
    w = torch.randn(K, K, C, F, device="cuda", dtype=torch.float16)
    out = torch.zeros(N, OH, OW, F, device="cuda", dtype=torch.float32)
    tilelang.compile(f, target="cuda")(x, w, out)
    ref = torch.nn.functional.conv2d(x.permute(0, 3, 1, 2).float(), w.permute(3, 2, 0, 1).float(),
                                     stride=S, padding=P, dilation=D).permute(0, 2, 3, 1)
    torch.testing.assert_close(out, ref, rtol=1e-2, atol=1e-2)


GPU_CASES = CASES + [(2, 16, 16, 64, 64, 3, 1, 1, 1),     # channels a multiple of 8: 16-byte cp.async
                     (1, 10, 13, 12, 64, 3, 1, 1, 1),     # 12 channels: 8-byte vectors
                     (1, 14, 14, 3, 64, 3, 2, 1, 1),      # 3 channels: element copies
                     (2, 20, 18, 128, 128, 3, 2, 2, 2)]   # strided, dilated, padded


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES)
def test_im2col_conv_gpu(case):
    import torch
    N, H, W, C, F, K, S, D, P = case
    f, (OH, OW) = conv_kernel(*case)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    w = rng.standard_normal((K, K, C, F)).astype(np.float16)
    out = torch.zeros((N, OH, OW, F), dtype=torch.float32, device="cuda")
    tilelang.compile(f, target="cuda")(torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda(), out)
    np.testing.assert_allclose(out.cpu().numpy(), reference(x.astype(np.float64), w.astype(np.float64), S, D, P),
                               rtol=1e-2, atol=1e-2)


@needs_nvrtc
@pytest.mark.parametrize("C,width", [(32, 16), (12, 8), (3, None)])
def test_im2col_tile_is_a_pipelined_vector_copy(C, width):
    # channels that split into whole vectors make each row of the tile a cp.async of
    # `width` bytes (its padding check holds for the whole vector); 3 channels cannot
    src = tilelang.compile(conv_kernel(1, 12, 10, C, 64, 3, 1, 1, 1)[0], target="cuda -arch=sm_90a").get_kernel_source()
    data_copies = [ln for ln in src.splitlines() if "(&a_slot" in ln]
    if width is None:
        assert not data_copies and "a[" in src
    else:
        assert data_copies and all(f"cp_async_gs_conditional<{width}>" in ln for ln in data_copies), data_copies
