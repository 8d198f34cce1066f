"""Warp shuffles, warp reductions and votes (T.shfl_*, T.warp_reduce_*, T.ballot_sync,
...): CUDA source and SASS here, results on the GPU; the CPU backend rejects them."""
import numpy as np
import pytest

import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass


def warp_sums(n=256):
    @T.prim_func
    def k(X: T.Tensor((n,), "float32"), S: T.Tensor((n // 32,), "float32"), D: T.Tensor((n,), "float32"),
          B: T.Tensor((n // 32,), "uint64"), C: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            v = T.alloc_var("float32")
            v = X[tx]
            s = T.warp_reduce_sum(v)
            D[tx] = T.shfl_down(v, 1) + T.shfl_xor(v, 2) + T.shfl_sync(v, 0) + T.shfl_up(v, 1)
            b = T.ballot_sync(v > 0)
            cnt = T.syncthreads_count(v > 0)
            if tx % 32 == 0:
                S[tx // 32] = s
                B[tx // 32] = b
            if tx == 0:
                C[0] = cnt
    return k


@needs_sass
def test_warp_intrinsics_compile_to_shuffles_and_votes():
    kern = tilelang.compile(warp_sums(), target="cuda -arch=sm_90a")
    src = kern.get_kernel_source()
    for f in ("__shfl_down_sync(", "__shfl_xor_sync(", "__shfl_sync(", "__shfl_up_sync(",
              "tl::warp_reduce(", "__ballot_sync(", "__syncthreads_count("):
        assert f in src, f
    sass = kern.get_sass()
    assert "SHFL.BFLY" in sass and "SHFL.DOWN" in sass and "VOTE" in sass


def test_cpu_rejects_warp_intrinsics_clearly():
    with pytest.raises(tilelang.TileLangError, match="other threads") as e:
        tilelang.compile(warp_sums(), target="cpu")
    assert "test_warp_intrinsics.py" in str(e.value)


def test_float_predicate_is_rejected():
    with pytest.raises(tilelang.TileLangError, match="predicate"):
        @T.prim_func
        def k(X: T.Tensor((32,), "float32"), B: T.Tensor((32,), "uint64")):
            with T.Kernel(1, threads=32):
                tx = T.get_thread_binding()
                B[tx] = T.ballot_sync(X[tx])


@pytest.mark.gpu
def test_warp_intrinsics_on_gpu():
    import torch
    n = 256
    kern = tilelang.compile(warp_sums(n), target="cuda")
    x = torch.randn(n, device="cuda")
    s = torch.zeros(n // 32, device="cuda")
    d = torch.zeros(n, device="cuda")
    b = torch.zeros(n // 32, device="cuda", dtype=torch.uint64)
    c = torch.zeros(1, device="cuda", dtype=torch.int32)
    kern(x, s, d, b, c)
    xw = x.view(-1, 32).cpu()
    torch.testing.assert_close(s.cpu(), xw.sum(1), rtol=1e-5, atol=1e-5)
    lane = torch.arange(32)
    down = xw[:, torch.clamp(lane + 1, max=31)]
    up = xw[:, torch.clamp(lane - 1, min=0)]
    ref = down + xw[:, lane ^ 2] + xw[:, :1] + up
    torch.testing.assert_close(d.cpu().view(-1, 32), ref, rtol=1e-5, atol=1e-5)
    bits = ((xw > 0).to(torch.int64) << lane).sum(1)
    assert [int(v) for v in b.cpu().to(torch.int64)] == [int(v) for v in bits]
    assert int(c.item()) == int((x > 0).sum())


@needs_nvrtc
def test_match_and_elect():
    @T.prim_func
    def k(X: T.Tensor((64,), "int32"), M: T.Tensor((64,), "uint32"), A: T.Tensor((64,), "uint32"),
          E: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            M[tx] = T.match_any_sync(X[tx])
            A[tx] = T.match_all_sync(X[tx])
            E[tx] = T.if_then_else(T.shuffle_elect(32), 1, 0)
    src = tilelang.compile(k, target="cuda -arch=sm_90a").get_kernel_source()
    assert "__match_any_sync(" in src and "tl::match_all(" in src
    assert "((tx) & 31) == 0" in src   # one elected lane per 32 threads


def test_index_to_coordinates_on_cpu():
    @T.prim_func
    def k(O: T.Tensor((3,), "int32")):
        with T.Kernel(1):
            c = T.index_to_coordinates(23, (2, 3, 4))
            O[0] = c[0]
            O[1] = c[1]
            O[2] = c[2]
    kern = tilelang.compile(k, target="cpu")
    o = np.zeros(3, np.int32)
    kern(o)
    assert list(o) == list(np.unravel_index(23, (2, 3, 4)))


def test_warp_info_defaults_and_two_dimensional_blocks():
    @T.prim_func
    def k(L: T.Tensor((4, 32), "int32"), W: T.Tensor((4, 32), "int32"), G: T.Tensor((4, 32), "int32")):
        with T.Kernel(1, threads=[32, 4]):
            tx, ty = T.get_thread_bindings()[:2]
            L[ty, tx] = T.get_lane_idx(None)
            W[ty, tx] = T.get_warp_idx_sync(16)
            G[ty, tx] = T.get_warp_group_idx(None, 2)
    out = [torch.zeros(4, 32, dtype=torch.int32) for _ in range(3)]
    tilelang.compile(k, target="cpu")(*out)
    lin = torch.arange(128, dtype=torch.int32).reshape(4, 32)
    assert torch.equal(out[0], lin % 32) and torch.equal(out[1], lin // 16) and torch.equal(out[2], lin // 64)


def _shuffled(use_tvm_names, kind):
    @T.prim_func
    def k(X: T.Tensor((64,), "float32"), D: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            if use_tvm_names:
                f = {"sync": T.tvm_warp_shuffle, "down": T.tvm_warp_shuffle_down, "up": T.tvm_warp_shuffle_up}[kind]
                D[tx] = f(0xFFFFFFFF, X[tx], (tx ^ 1) % 32 if kind == "sync" else 2, 32, 32)
            else:
                f = {"sync": T.shfl_sync, "down": T.shfl_down, "up": T.shfl_up}[kind]
                D[tx] = f(X[tx], (tx ^ 1) % 32 if kind == "sync" else 2, 32)
    return k


@pytest.mark.parametrize("kind", ["sync", "down", "up"])
def test_tvm_warp_shuffle_spellings_are_the_shuffles(kind):
    """`T.tvm_warp_shuffle(mask, value, lane, width, warp_size)` (published
    hadamard_transform/example_hadamard.py) and its down / up forms: the same IR as T.shfl_*."""
    from tilelang.ir.printer import func_str
    assert func_str(_shuffled(True, kind)) == func_str(_shuffled(False, kind))


def test_tvm_warp_shuffle_needs_a_32_lane_warp():
    with pytest.raises(tilelang.TileLangError, match="warp_size must be 32"):
        @T.prim_func
        def k(X: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64):
                tx = T.get_thread_binding()
                X[tx] = T.tvm_warp_shuffle(0xFFFFFFFF, X[tx], 0, 64, 64)
