"""The HIP launcher against a fake driver: a Python object with the HIP API's function
names standing in for libamdhip64 (ctypes arguments, recorded calls)."""
import ctypes

import pytest

from tilelang.backend.base import Artifact
from tilelang.backend.registry import parse_target
from tilelang.backend.hip import runtime as R


class FakeHip:
    def __init__(self, devices=1):
        self.calls, self.devices = [], devices

    def hipInit(self, flags):
        self.calls.append(("hipInit", flags))
        return 0

    def hipGetDeviceCount(self, ref):
        ref._obj.value = self.devices
        return 0

    def hipModuleLoadData(self, ref, image):
        self.calls.append(("hipModuleLoadData", bytes(image.raw)))
        ref._obj.value = 0x1000
        return 0

    def hipModuleGetFunction(self, ref, module, name):
        self.calls.append(("hipModuleGetFunction", module.value, name))
        ref._obj.value = 0x2000 + len(self.calls)
        return 0

    def hipModuleLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, lds, stream, params, extra):
        grid, block = (gx.value, gy.value, gz.value), (bx.value, by.value, bz.value)
        self.calls.append(("hipModuleLaunchKernel", fn.value, grid, block, stream.value, params))
        return 0


class Tensor:
    def __init__(self, addr):
        self.addr = addr

    def data_ptr(self):
        return self.addr


def _artifact():
    meta = {"kernels": [{"entry": "k0", "grid": ["((ints[0]) + 63) // 64", "2", "1"], "threads": [256, 1, 1],
                         "lds": 0},
                        {"entry": "k1", "grid": ["1", "1", "1"], "threads": [64, 1, 1], "lds": 0}],
            "param_types": [("buffer", "float16"), ("buffer", "float32"), ("int", "int32"), ("float", "float32")],
            "workspaces": []}
    return Artifact(parse_target("hip"), "src", b"\x7fELF code object", "k0", meta)


def test_launch_through_the_driver_api():
    fake = FakeHip()
    launcher = R.HipLauncher(_artifact(), driver=lambda: R.Driver(fake))
    launcher([Tensor(0xA000), Tensor(0xB000)], [130], [0.5], stream=7)
    names = [c[0] for c in fake.calls]
    assert names == ["hipInit", "hipModuleLoadData", "hipModuleGetFunction", "hipModuleGetFunction",
                     "hipModuleLaunchKernel", "hipModuleLaunchKernel"]
    assert fake.calls[1][1].startswith(b"\x7fELF code object")
    assert [c[2] for c in fake.calls[2:4]] == [b"k0", b"k1"]
    _, fn, grid, block, stream, params = fake.calls[4]
    assert grid == (3, 2, 1) and block == (256, 1, 1) and stream == 7
    vals = [ctypes.cast(params[i], ctypes.POINTER(t)).contents.value
            for i, t in enumerate((ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_float))]
    assert vals == [0xA000, 0xB000, 130, 0.5]
    assert fake.calls[5][2] == (1, 1, 1) and fake.calls[5][3] == (64, 1, 1)
    launcher([Tensor(1), Tensor(2)], [10], [1.0], stream=0)   # the module is loaded once
    assert [c[0] for c in fake.calls].count("hipModuleLoadData") == 1


def test_failed_call_names_the_function():
    fake = FakeHip()
    fake.hipModuleGetFunction = lambda ref, module, name: 500
    launcher = R.HipLauncher(_artifact(), driver=lambda: R.Driver(fake))
    with pytest.raises(R.HipError, match=r"hipModuleGetFunction\(k0\) failed: hipError 500"):
        launcher([Tensor(1), Tensor(2)], [1], [1.0], stream=0)


def test_no_gpu_is_a_clear_error():
    with pytest.raises(R.HipUnavailableError, match="no AMD GPU"):
        R.Driver(FakeHip(devices=0))


def test_no_library_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("TILELANG_HIP_LIBRARY", "/nonexistent/libamdhip64.so")
    with pytest.raises(R.HipUnavailableError, match="libamdhip64"):
        R.open_library()
