"""The launch as one C call (host/c_launch.c): the values reach the driver's parameter
slots with their C types, bad values are refused before the driver runs, and the CUDA
launcher's fast path uses it (or ctypes, with TILELANG_CUDA_C_LAUNCH=0) with the same
results. A fake cuLaunchKernel in C stands for the driver: no GPU needed."""
import ctypes
import shutil
import struct
import subprocess

import pytest
import torch

import tilelang
from tilelang.backend.cuda.host import c_launch
from tilelang.backend.cuda.host.nvrtc import nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC (cuda-bindings, nvidia-cuda-nvrtc) not installed")

_FAKE_DRIVER_C = r"""
#include <stdint.h>
#include <string.h>
typedef unsigned int u;
uint64_t rec[10];
unsigned char raw[16][8];
void *after[2];
int ncalls, nvals, ret;
int cuLaunchKernel(void* f, u gx, u gy, u gz, u bx, u by, u bz, u smem, void* stream, void** params, void** extra) {
    int i;
    ncalls++;
    rec[0] = (uint64_t)f; rec[1] = gx; rec[2] = gy; rec[3] = gz; rec[4] = bx; rec[5] = by; rec[6] = bz;
    rec[7] = smem; rec[8] = (uint64_t)stream; rec[9] = (uint64_t)extra;
    for (i = 0; i < nvals; i++) memcpy(raw[i], params[i], 8);
    after[0] = params[nvals]; after[1] = params[nvals + 1];
    return ret;
}
"""


@pytest.fixture(scope="module")
def ext():
    mod = c_launch.extension()
    if mod is None:
        pytest.skip(f"no C launch extension here: {c_launch.reason()}")
    return mod


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("fake_driver")
    (d / "fake.c").write_text(_FAKE_DRIVER_C)
    so = d / "libfakecuda.so"
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(so), str(d / "fake.c")], check=True)
    lib = ctypes.CDLL(str(so))
    lib.cuLaunchKernel.restype = ctypes.c_int
    return lib


def _addr(fn):
    return ctypes.cast(fn, ctypes.c_void_p).value


def _int(lib, name):
    return ctypes.c_int.in_dll(lib, name)


def test_values_reach_their_slots_with_their_c_types(ext, driver):
    kinds = "pbBhHiIqQ?fd"
    _int(driver, "nvals").value = len(kinds)
    _int(driver, "ret").value = 0
    L = ext.Launch(_addr(driver.cuLaunchKernel), 0x1234, 128, 2, 1, 4096, kinds, (0xBEEF0, 0xBEEF8))
    vals = [0x7F0000001000, -1, 255, -2, 65535, -3, 2 ** 32 - 1, -(2 ** 40), 2 ** 64 - 1, True, 0.5, 1.25]
    assert L(7, 3, 2, 0xABC000, *vals) == 0
    rec = (ctypes.c_uint64 * 10).in_dll(driver, "rec")
    assert list(rec) == [0x1234, 7, 3, 2, 128, 2, 1, 4096, 0xABC000, 0]
    raw = (ctypes.c_ubyte * 8 * 16).in_dll(driver, "raw")
    got = [bytes(raw[i]) for i in range(len(kinds))]
    want = [struct.pack("<Q", vals[0]), struct.pack("<b", -1), struct.pack("<B", 255), struct.pack("<h", -2),
            struct.pack("<H", 65535), struct.pack("<i", -3), struct.pack("<I", 2 ** 32 - 1),
            struct.pack("<q", -(2 ** 40)), struct.pack("<Q", 2 ** 64 - 1), b"\x01", struct.pack("<f", 0.5),
            struct.pack("<d", 1.25)]
    for g, w in zip(got, want):   # each value's own width; the rest of its 8-byte slot stays zero
        assert g == w.ljust(8, b"\0")
    after = (ctypes.c_void_p * 2).in_dll(driver, "after")
    assert list(after) == [0xBEEF0, 0xBEEF8]   # fixed extra parameters (tensor maps) follow the values
    _int(driver, "ret").value = 700
    assert L(1, 1, 1, 0, *vals) == 700     # the driver's CUresult comes back


def test_bad_values_are_refused_before_the_driver_runs(ext, driver):
    _int(driver, "nvals").value = 2
    _int(driver, "ret").value = 0
    L = ext.Launch(_addr(driver.cuLaunchKernel), 1, 32, 1, 1, 0, "pi", ())
    n = _int(driver, "ncalls").value
    with pytest.raises(TypeError, match="6 arguments"):
        L(1, 1, 1, 0, 4096)
    with pytest.raises(TypeError):        # a float for an int parameter is not truncated
        L(1, 1, 1, 0, 4096, 2.5)
    with pytest.raises(TypeError):
        L(1, 1, 1, 0, "4096", 1)
    # a grid extent that is not an unsigned int: CUDA_ERROR_INVALID_VALUE, as the ctypes path
    assert L(2 ** 32, 1, 1, 0, 4096, 1) == 1 and L(-1, 1, 1, 0, 4096, 1) == 1 and L(1.0, 1, 1, 0, 4096, 1) == 1
    assert _int(driver, "ncalls").value == n
    with pytest.raises(ValueError, match="unknown parameter kind"):
        ext.Launch(_addr(driver.cuLaunchKernel), 1, 32, 1, 1, 0, "px", ())


def test_more_values_than_the_stack_copy_holds(ext, driver):
    _int(driver, "nvals").value = 16
    _int(driver, "ret").value = 0
    L = ext.Launch(_addr(driver.cuLaunchKernel), 1, 32, 1, 1, 0, "q" * 70, ())
    assert L(1, 1, 1, 0, *range(100, 170)) == 0
    raw = (ctypes.c_ubyte * 8 * 16).in_dll(driver, "raw")
    assert [struct.unpack("<q", bytes(raw[i]))[0] for i in range(16)] == list(range(100, 116))
    with pytest.raises(TypeError):
        L(1, 1, 1, 0, *range(100, 169), 1.5)


def test_switch_off_means_no_extension(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_C_LAUNCH", "0")
    c_launch.reset()
    try:
        assert c_launch.extension() is None and "TILELANG_CUDA_C_LAUNCH=0" in c_launch.reason()
    finally:
        monkeypatch.delenv("TILELANG_CUDA_C_LAUNCH")
        c_launch.reset()


class FakeCudaTensor:
    """What the launch path reads from a torch CUDA tensor, backed by a CPU tensor."""
    is_cuda = True

    def __init__(self, t):
        self.t, self.dtype, self.shape = t, t.dtype, t.shape
        self.data_ptr = t.data_ptr
        self.is_contiguous = t.is_contiguous
        self.get_device = lambda: 0


def _scale_func():
    from tests.jit.test_launch_fast_path import scale_func
    return scale_func()


@needs_nvrtc
@pytest.mark.parametrize("c_call", [True, False], ids=["c_launch", "ctypes"])
def test_cuda_launcher_same_launch_either_way(c_call, driver, monkeypatch):
    from tilelang.backend.cuda.host import runtime as rt
    if c_call and c_launch.extension() is None:
        pytest.skip(f"no C launch extension here: {c_launch.reason()}")
    monkeypatch.setenv("TILELANG_CUDA_C_LAUNCH", "1" if c_call else "0")
    c_launch.reset()
    try:
        _int(driver, "nvals").value = 5
        _int(driver, "ret").value = 0
        k = tilelang.compile(_scale_func(), target="cuda -arch=sm_90a")
        L = k.launcher
        fast = rt.fake_driver_for_benchmarks(L, driver.cuLaunchKernel, stream=0x7F0000001000)
        assert ("C0(" in fast.source) == c_call and ("with lock" in fast.source) != c_call
        a, b = FakeCudaTensor(torch.rand(4)), FakeCudaTensor(torch.rand(4))
        L.positional()(a, b, 3, 1000, 0.5)
        rec = (ctypes.c_uint64 * 10).in_dll(driver, "rec")
        assert list(rec[1:9]) == [32, 1, 1, 32, 1, 1, L.meta["kernels"][0]["smem"], 0x7F0000001000]
        raw = (ctypes.c_ubyte * 8 * 16).in_dll(driver, "raw")
        assert [struct.unpack_from(f, bytes(raw[i]))[0] for i, f in enumerate("QQiif")] == \
            [a.data_ptr(), b.data_ptr(), 3, 1000, 0.5]
        # a value the C type cannot take: the general path explains it
        n = _int(driver, "ncalls").value
        with pytest.raises(TypeError):
            L.positional()(a, b, 2.5, 1000, 0.5)
        assert _int(driver, "ncalls").value == n
        # a driver error is explained
        _int(driver, "ret").value = 700
        with pytest.raises(rt.CudaRuntimeError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
            L([a, b], (3, 1000), (0.5,))
    finally:
        _int(driver, "ret").value = 0
        monkeypatch.delenv("TILELANG_CUDA_C_LAUNCH")
        c_launch.reset()


@needs_nvrtc
def test_tensor_map_updates_and_their_launch_stay_under_the_lock(ext, driver):
    """A kernel with TMA descriptors: they are shared state, encoded just before the
    launch that reads them; the C call gets their addresses as fixed extra parameters."""
    from tilelang.backend.cuda.host import runtime as rt
    from tests.backend.cuda import kernels as K
    k = tilelang.compile(K.gemm(256, 256, 256), target="cuda -arch=sm_90a")
    L = k.launcher
    L._constants()
    if not any(L._tmaps):
        pytest.skip("this GEMM has no tensor maps")
    fast = rt.fake_driver_for_benchmarks(L, driver.cuLaunchKernel)
    body = fast.source.split("def fastp")[0]
    lock, update, call = body.index("with lock:"), body.index("T0_0.update("), body.index("r = C0(")
    assert lock < update < call


@needs_nvrtc
def test_jit_fast_path_launches_through_the_checked_entry(ext, driver):
    """JITKernel's fast path has checked that its tensors are CUDA tensors: it binds the
    launcher's entry that does not test again; a CPU tensor is still explained."""
    from tilelang.backend.cuda.host import runtime as rt
    from tilelang.ir.errors import ArgumentError
    _int(driver, "nvals").value = 5
    _int(driver, "ret").value = 0
    k = tilelang.compile(_scale_func(), target="cuda -arch=sm_90a")
    fast = rt.fake_driver_for_benchmarks(k.launcher, driver.cuLaunchKernel)
    a, b = FakeCudaTensor(torch.rand(1000, 4)), FakeCudaTensor(torch.rand(1000, 4))  # no divisible variant
    for _ in range(3):   # the slow path, then the generated one
        k(a, 0.25, 7, b)
    assert k._fast.__globals__["L"] is fast.positional_checked
    assert ".is_cuda" not in fast.source.split("def fastc")[1]
    raw = (ctypes.c_ubyte * 8 * 16).in_dll(driver, "raw")
    assert [struct.unpack_from(f, bytes(raw[i]))[0] for i, f in enumerate("QQiif")] == \
        [a.data_ptr(), b.data_ptr(), 7, 1000, 0.25]
    with pytest.raises(ArgumentError, match="device 'cpu'"):
        k(torch.rand(1000, 4), 0.25, 7, b)
