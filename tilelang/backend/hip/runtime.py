"""Loading and launching HIP code objects through the HIP driver API (`libamdhip64.so`)
with ctypes: hipModuleLoadData, hipModuleGetFunction, hipModuleLaunchKernel. Tensors are
passed by address (`data_ptr()`, a ROCm build of torch), scalars by value, on torch's
current stream. The library is opened at the first launch, so a kernel compiles and
shows its source and ISA on a machine without an AMD GPU; launching there raises
`HipUnavailableError` saying what is missing."""
from __future__ import annotations

import ctypes
import os
import threading

from tilelang.ir.errors import TileLangError

_SCALARS = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
            "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
            "uint64": ctypes.c_uint64, "bool": ctypes.c_bool, "float32": ctypes.c_float,
            "float64": ctypes.c_double, "handle": ctypes.c_void_p}
LIBRARY_NAMES = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so")


class HipUnavailableError(TileLangError, RuntimeError):
    """No HIP runtime or no AMD GPU on this machine."""


class HipError(TileLangError, RuntimeError):
    """A HIP driver call failed."""


def open_library():
    """The HIP runtime library ($TILELANG_HIP_LIBRARY, else the usual names)."""
    names = [os.environ["TILELANG_HIP_LIBRARY"]] if os.environ.get("TILELANG_HIP_LIBRARY") else LIBRARY_NAMES
    errors = []
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError as e:
            errors.append(str(e))
    raise HipUnavailableError("cannot run a HIP kernel here: the HIP runtime (libamdhip64.so) is not installed",
                              span=None, hint="run on a machine with an AMD GPU and ROCm; kernel.get_kernel_source() "
                                              "and kernel.get_asm() work without one")


class Driver:
    """The few HIP calls a launch needs, over a ctypes library (or a stand-in with the same
    function names, as the tests use)."""

    def __init__(self, lib):
        self.lib = lib
        self._check(lib.hipInit(0), "hipInit")
        n = ctypes.c_int(0)
        self._check(lib.hipGetDeviceCount(ctypes.byref(n)), "hipGetDeviceCount")
        if n.value == 0:
            raise HipUnavailableError("cannot run a HIP kernel here: the HIP runtime sees no AMD GPU", span=None,
                                      hint="check HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES and `rocm-smi`")

    def _check(self, err, what):
        if err != 0:
            msg = ""
            try:
                fn = self.lib.hipGetErrorString
                fn.restype = ctypes.c_char_p
                msg = (fn(err) or b"").decode()
            except Exception:  # noqa: BLE001 - the message is a courtesy
                pass
            raise HipError(f"{what} failed: hipError {err} {msg}".rstrip(), span=None)

    def load_module(self, image: bytes):
        module = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image, len(image))
        self._check(self.lib.hipModuleLoadData(ctypes.byref(module), buf), "hipModuleLoadData")
        return module

    def get_function(self, module, name):
        fn = ctypes.c_void_p()
        self._check(self.lib.hipModuleGetFunction(ctypes.byref(fn), module, name.encode()),
                    f"hipModuleGetFunction({name})")
        return fn

    def launch(self, fn, grid, block, lds, stream, args):
        """`args`: ctypes values in parameter order."""
        arr = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p)
                                                      for a in args])
        self._check(self.lib.hipModuleLaunchKernel(fn, *(ctypes.c_uint(int(g)) for g in grid),
                                                   *(ctypes.c_uint(int(b)) for b in block),
                                                   ctypes.c_uint(0), ctypes.c_void_p(stream), arr, None),
                    "hipModuleLaunchKernel")


_driver = None
_driver_lock = threading.Lock()


def default_driver():
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = Driver(open_library())
        return _driver


def _current_stream():
    try:
        import torch
    except ImportError:
        return 0
    if getattr(torch.version, "hip", None) and torch.cuda.is_available():
        return int(torch.cuda.current_stream().cuda_stream)
    return 0


def _address(t):
    if hasattr(t, "data_ptr"):
        return int(t.data_ptr())
    if isinstance(t, int):
        return t
    raise TypeError(f"a HIP kernel's tensor argument must have data_ptr() (a torch tensor on the GPU), got "
                    f"{type(t).__name__}")


class HipLauncher:
    """`launcher(buffers, ints, floats)` (backend/base.py): launches every kernel of the
    artifact in order. `driver`: a factory of the Driver (default: libamdhip64)."""

    def __init__(self, artifact, driver=None):
        self.artifact = artifact
        self.meta = artifact.meta
        self._driver_factory = driver or default_driver
        self._funcs = None
        self._lock = threading.Lock()

    def _load(self):
        drv = self._driver_factory()
        module = drv.load_module(self.artifact.binary)
        funcs = [drv.get_function(module, k["entry"]) for k in self.meta["kernels"]]
        self._drv, self._module = drv, module
        return funcs

    def _workspaces(self, env, buffers):
        """Function-level global buffers (T.alloc_global...): fresh zeroed device tensors."""
        if not self.meta.get("workspaces"):
            return []
        import torch
        dev = next((b.device for b in buffers if isinstance(b, torch.Tensor)), "cuda")
        return [torch.zeros([int(eval(x, {"__builtins__": {}}, env)) for x in w["shape"]],  # noqa: S307
                            dtype=getattr(torch, w["dtype"]), device=dev) for w in self.meta["workspaces"]]

    def __call__(self, buffers, ints=(), floats=(), stream=None):
        if self._funcs is None:
            with self._lock:
                if self._funcs is None:
                    self._funcs = self._load()
        env = {"ints": list(ints), "min": min, "max": max, "int": int}
        buffers = list(buffers) + self._workspaces(env, buffers)
        args, bi, ii, fi = [], 0, 0, 0
        for cls, dt in self.meta["param_types"]:
            if cls == "buffer":
                args.append(ctypes.c_void_p(_address(buffers[bi])))
                bi += 1
            elif cls == "int":
                args.append(_SCALARS.get(dt, ctypes.c_int64)(int(ints[ii])))
                ii += 1
            else:
                args.append(_SCALARS.get(dt, ctypes.c_float)(float(floats[fi])))
                fi += 1
        s = _current_stream() if stream is None else stream
        for fn, k in zip(self._funcs, self.meta["kernels"]):
            grid = [int(eval(g, {"__builtins__": {}}, env)) for g in k["grid"]]   # noqa: S307 - our own py_expr
            if any(g <= 0 for g in grid):
                continue
            self._drv.launch(fn, grid, k["threads"], k["lds"], s, args)
