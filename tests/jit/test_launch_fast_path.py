"""The per-signature launch fast path: small Python overhead per call, every wrong
argument still explained by the slow path (with the caller's span), and the CUDA
launcher's argument packing checked against a fake driver (no GPU needed)."""
import ctypes
import time

import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.host.nvrtc import nvrtc_available
from tilelang.ir.errors import ArgumentError

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC (cuda-bindings, nvidia-cuda-nvrtc) not installed")


def tiny_func():
    @T.prim_func
    def tiny(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                A[i] = A[i] + 1.0
    return tiny


def scale_func():
    """Inputs with a dynamic dimension, a float and an int scalar, an out_idx output."""
    n = T.dynamic("n")

    @T.prim_func
    def scale(A: T.Tensor((n, 4), "float32"), alpha: T.float32, reps: T.int32, B: T.Tensor((n, 4), "float32")):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            acc = T.alloc_var("float32", 0.0)
            for r in T.serial(reps):
                acc = acc + alpha
            for i, j in T.Parallel(32, 4):
                if bx * 32 + i < n:
                    B[bx * 32 + i, j] = A[bx * 32 + i, j] * acc
    return scale


@pytest.fixture(scope="module")
def scale():
    return tilelang.compile(scale_func(), out_idx=[-1], target="cpu")


def _per_call_us(fn, n=3000, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


def test_python_side_of_a_call_is_small():
    k = tilelang.compile(tiny_func(), target="cpu")
    calls = []
    k.launcher = lambda buffers, ints, floats: calls.append(len(buffers))
    a = torch.zeros(32)
    k(a)  # the first call takes the slow path (and loads the launcher)
    k(a)
    assert getattr(k._fast, "source", None), "the generated fast path is used for a valid call"
    calls.clear()
    us = _per_call_us(lambda: k(a))
    assert calls and us < 30, f"{us:.2f} us per call on the Python side"


def test_fast_path_results_and_bindings(scale):
    a = torch.rand(70, 4)
    for _ in range(2):
        out = scale(a, 0.5, 3)
        torch.testing.assert_close(out, a * 1.5)
    assert getattr(scale._fast, "source", None)
    out = scale(a[:5], 2, 1)  # another binding of n; an int for a float scalar
    torch.testing.assert_close(out, a[:5] * 2)
    # numpy (the general path) still works beside it
    x = np.random.rand(9, 4).astype("float32")
    np.testing.assert_allclose(scale(x, 1.0, 2), 2 * x, rtol=1e-6)
    # outputs passed in too
    c = torch.zeros(70, 4)
    scale(a, 1.0, 1, c)


def outputs_func():
    """Three outputs: the shape and dtype of input A, A's shape in another dtype, a shape
    no input has."""
    n = T.dynamic("n")

    @T.prim_func
    def outs(A: T.Tensor((n, 4), "float32"), S: T.Tensor((4,), "float32"), B: T.Tensor((n, 4), "float32"),
             H: T.Tensor((n, 4), "float16"), R: T.Tensor((3,), "float32")):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i, j in T.Parallel(32, 4):
                if bx * 32 + i < n:
                    B[bx * 32 + i, j] = A[bx * 32 + i, j] * S[j]
                    H[bx * 32 + i, j] = T.cast(A[bx * 32 + i, j] + 1.0, "float16")
            if bx == 0:
                for r in T.serial(3):
                    R[r] = S[r] * 2.0
    return outs


def test_fast_path_allocates_outputs_like_an_input():
    k = tilelang.compile(outputs_func(), out_idx=[2, 3, 4], target="cpu")
    s = torch.arange(4, dtype=torch.float32)
    for n in (70, 70, 5):   # the first call builds the fast path; then another n
        a = torch.rand(n, 4, requires_grad=True)
        b, h, r = k(a, s)
        torch.testing.assert_close(b, a.detach() * s)
        torch.testing.assert_close(h, (a.detach() + 1).half())
        torch.testing.assert_close(r, s[:3] * 2)
        assert (b.shape, b.dtype, h.shape, h.dtype, r.shape) == ((n, 4), torch.float32, (n, 4), torch.float16, (3,))
        assert not b.requires_grad and b.is_contiguous() and h.is_contiguous()
        assert b.data_ptr() != a.data_ptr()
    src = k._fast.source
    assert "o2 = empty_like(a0)" in src and "o3 = empty_like(a0, dtype=D3)" in src and "o4 = empty((3, )" in src


def _raises_at_caller(match, fn):
    with pytest.raises(ArgumentError, match=match) as e:
        fn()
    assert "test_launch_fast_path.py" in str(e.value), str(e.value)  # the span points at the call
    return e.value


def test_errors_go_through_the_slow_path_with_spans(scale):
    a = torch.rand(70, 4)
    scale(a, 0.5, 3)
    scale(a, 0.5, 3)  # the fast path is built
    _raises_at_caller("dtype float64, the kernel expects float32", lambda: scale(a.double(), 0.5, 3))
    _raises_at_caller("has 1 dimensions", lambda: scale(torch.rand(280), 0.5, 3))
    _raises_at_caller(r"dimension 1: 5 != 4", lambda: scale(torch.rand(70, 5), 0.5, 3))
    _raises_at_caller("not contiguous", lambda: scale(torch.rand(4, 70).t(), 0.5, 3))
    _raises_at_caller("on device 'meta'", lambda: scale(torch.empty(70, 4, device="meta"), 0.5, 3))
    _raises_at_caller(r"takes 3 argument\(s\) \(A, alpha, reps\), got 1", lambda: scale(a))
    _raises_at_caller("must be a tensor", lambda: scale([1.0] * 4, 0.5, 3))
    _raises_at_caller("is a scalar", lambda: scale(a, a, 3))
    torch.testing.assert_close(scale(a, 0.5, 3), a * 1.5)  # and the fast path still works after


def test_dynamic_dimension_mismatch_between_inputs():
    n = T.dynamic("n")

    @T.prim_func
    def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    C[bx * 32 + i] = A[bx * 32 + i] + B[bx * 32 + i]
    k = tilelang.compile(add, out_idx=[-1], target="cpu")
    x = torch.rand(40)
    torch.testing.assert_close(k(x, x), 2 * x)
    _raises_at_caller("bound to 40 by an earlier argument", lambda: k(x, torch.rand(41)))


@needs_nvrtc
def test_cuda_kernel_rejects_cpu_tensors_through_the_slow_path():
    k = tilelang.compile(tiny_func(), target="cuda -arch=sm_90a")
    _raises_at_caller("is on device 'cpu', the kernel was compiled for 'cuda'", lambda: k(torch.zeros(32)))


# the CUDA launcher with a fake driver ----------------------------------------------------------

class FakeCudaTensor:
    """What the launch path reads from a torch CUDA tensor, backed by a CPU tensor."""
    is_cuda = True

    def __init__(self, t, ptr=None):
        self.t, self.dtype, self.shape = t, t.dtype, t.shape
        self.is_contiguous = t.is_contiguous
        self.data_ptr = (lambda: ptr) if ptr is not None else t.data_ptr
        self.get_device = lambda: 0


def _recording_launch(types, calls):
    def launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        vals = [t.from_address(params[k]).value for k, t in enumerate(types)]
        stream = stream.value if isinstance(stream, ctypes.c_void_p) else stream
        calls.append(dict(grid=(gx, gy, gz), block=(bx, by, bz), smem=smem, stream=stream, values=vals))
        return 0
    return launch


@needs_nvrtc
def test_cuda_launcher_packs_arguments():
    from tilelang.backend.cuda.host import runtime as rt
    k = tilelang.compile(scale_func(), target="cuda -arch=sm_90a")
    L = k.launcher
    L._constants()
    calls = []
    rt.fake_driver_for_benchmarks(L, _recording_launch(L._types, calls), stream=1234)
    a, b = FakeCudaTensor(torch.rand(1000, 4)), FakeCudaTensor(torch.rand(1000, 4))
    L([a, b], (3, 1000), (0.5,))
    (c,) = calls
    assert c["grid"] == ((1000 + 31) // 32, 1, 1) and c["block"] == (32, 1, 1) and c["stream"] == 1234
    order = [cls for cls, _ in L.meta["param_types"]]
    assert order == ["buffer", "buffer", "int", "int", "float"]
    assert c["values"] == [a.data_ptr(), b.data_ptr(), 3, 1000, 0.5]
    # through JITKernel: the same packing (no out_idx, so no real CUDA allocation is needed)
    calls.clear()
    for _ in range(3):  # the slow path, then the fast path through the launcher's positional entry
        k(a, 0.5, 3, b)
    assert getattr(k._fast, "source", None) and "L(a0, a3, s2, d0, s1)" in k._fast.source
    assert [c["values"] for c in calls] == [[a.data_ptr(), b.data_ptr(), 3, 1000, 0.5]] * 3
    calls.clear()
    with pytest.raises(TypeError):  # anything unexpected takes the general path, which explains
        L.positional()(a, object(), 3, 1000, 0.5)
    assert calls == []
    # an empty dynamic grid launches nothing
    calls.clear()
    e = FakeCudaTensor(torch.rand(0, 4))
    L([e, e], (3, 0), (0.5,))
    assert calls == []


@needs_nvrtc
def test_cuda_launcher_unexpected_arguments_take_the_general_path():
    from tilelang.backend.cuda.host import runtime as rt
    from tests.backend.cuda import kernels as K
    # sm_80: vector (cp.async) loads and no tensor map, which the fake driver cannot encode
    k = tilelang.compile(K.gemm(128, 128, 64), target="cuda -arch=sm_80")
    L = k.launcher
    L._constants()
    calls = []
    rt.fake_driver_for_benchmarks(L, _recording_launch(L._types, calls))
    assert max(L._align.values(), default=1) > 1, "the gemm's tiles are loaded with vector accesses"
    name = max(L._align, key=L._align.get)
    idx = [n for n in L.meta["param_names"]].index(name)
    ts = [FakeCudaTensor(torch.zeros(4), ptr=4096 * (j + 1)) for j in range(L.meta["n_buffers"])]
    L(ts, (), ())
    assert len(calls) == 1
    ts[idx] = FakeCudaTensor(torch.zeros(4), ptr=4096 + 2)  # misaligned: the general path explains
    with pytest.raises((rt.CudaRuntimeError, TypeError)):
        L(ts, (), ())
    with pytest.raises(TypeError, match="kernel expects"):  # wrong counts
        L(ts[:1], (), ())
    assert len(calls) == 1


_FAKE_DRIVER_C = r"""
#include <stdint.h>
#include <string.h>
typedef unsigned int u;
uint64_t rec[12];
double vals[8];
int cuLaunchKernel(void* f, u gx, u gy, u gz, u bx, u by, u bz, u smem, void* stream, void** params, void** extra) {
    rec[0] = (uint64_t)f; rec[1] = gx; rec[2] = gy; rec[3] = gz; rec[4] = bx; rec[5] = by; rec[6] = bz;
    rec[7] = smem; rec[8] = (uint64_t)stream; rec[9] = (uint64_t)extra;
    rec[10] = (uint64_t)*(void**)params[0];        /* A */
    rec[11] = (uint64_t)*(int32_t*)params[2];      /* reps */
    vals[0] = *(float*)params[4];                  /* alpha */
    return gx == 999 ? 700 : 0;                    /* 700: CUDA_ERROR_ILLEGAL_ADDRESS */
}
"""


@needs_nvrtc
def test_cuda_launcher_calls_a_c_driver_through_ctypes(tmp_path):
    """The same ctypes call as with libcuda (no argtypes): the C side sees the values."""
    import shutil
    import subprocess
    from tilelang.backend.cuda.host import runtime as rt
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "fake.c").write_text(_FAKE_DRIVER_C)
    so = tmp_path / "libfakecuda.so"
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(so), str(tmp_path / "fake.c")], check=True)
    lib = ctypes.CDLL(str(so))
    fn = lib.cuLaunchKernel
    fn.restype = ctypes.c_int
    k = tilelang.compile(scale_func(), target="cuda -arch=sm_90a")
    L = k.launcher
    rt.fake_driver_for_benchmarks(L, fn, stream=0x7F0000001000)
    a, b = FakeCudaTensor(torch.rand(4)), FakeCudaTensor(torch.rand(4))
    L([a, b], (3, 1000), (0.5,))
    rec = (ctypes.c_uint64 * 12).in_dll(lib, "rec")
    vals = (ctypes.c_double * 8).in_dll(lib, "vals")
    assert list(rec[1:8]) == [32, 1, 1, 32, 1, 1, L.meta["kernels"][0]["smem"]]
    assert rec[8] == 0x7F0000001000 and rec[9] == 0
    assert rec[10] == a.data_ptr() and rec[11] == 3 and vals[0] == 0.5
    # a driver error is reported (through cuda-bindings' error strings)
    with pytest.raises(rt.CudaRuntimeError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
        L([a, b], (3, 999 * 32), (0.5,))
    with pytest.raises(rt.CudaRuntimeError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
        L.positional()(a, b, 3, 999 * 32, 0.5)
    L.positional()(a, b, 4, 64, 0.25)
    assert rec[1] == 2 and rec[11] == 4 and vals[0] == 0.25
