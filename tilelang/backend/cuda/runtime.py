"""Load a cubin with the driver API and launch its kernels on torch's current
stream. The module is loaded on the first call (in the caller's CUDA context), so
building and loading work on machines without a GPU; calling does not."""
from __future__ import annotations

import ctypes
import threading

_CTYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
           "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
           "uint64": ctypes.c_uint64, "bool": ctypes.c_bool, "float32": ctypes.c_float,
           "float64": ctypes.c_double}


class CudaRuntimeError(RuntimeError):
    pass


def _check(res, what):
    from cuda.bindings import driver as drv
    err = res[0] if isinstance(res, tuple) else res
    if err != drv.CUresult.CUDA_SUCCESS:
        _, s = drv.cuGetErrorString(err)
        raise CudaRuntimeError(f"{what} failed: {err.name}: {s.decode() if isinstance(s, bytes) else s}")
    return res[1] if isinstance(res, tuple) and len(res) == 2 else (res[1:] if isinstance(res, tuple) else None)


def _require_gpu():
    from tilelang.backend.cuda.target import device_count
    if device_count() == 0:
        raise CudaRuntimeError("no CUDA GPU is visible: the CUDA backend can build kernels here but not run "
                               "them (use target='cpu' to run on the CPU)")


def _ensure_context():
    """Make torch's (primary) context current on this thread."""
    import torch
    from cuda.bindings import driver as drv
    torch.cuda.init()
    torch.cuda.current_device()
    ctx = _check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if ctx is None or int(ctx) == 0:
        dev = _check(drv.cuDeviceGet(torch.cuda.current_device()), "cuDeviceGet")
        pctx = _check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        _check(drv.cuCtxSetCurrent(pctx), "cuCtxSetCurrent")


def data_ptr(x):
    """Device pointer of a torch CUDA tensor or any DLPack-capable GPU array."""
    import torch
    if not isinstance(x, torch.Tensor):
        if hasattr(x, "__dlpack__"):
            x = torch.from_dlpack(x)
        else:
            raise TypeError(f"expected a torch CUDA tensor or a DLPack array, got {type(x).__name__}")
    if not x.is_cuda:
        raise CudaRuntimeError(f"a tensor argument is on {x.device}; the CUDA kernel needs it on a GPU "
                               f"(call .cuda() first)")
    return x.data_ptr()


class Launcher:
    def __init__(self, artifact):
        self.artifact = artifact
        self.meta = artifact.meta
        self._funcs = None
        self._lock = threading.Lock()

    def _load(self):
        from cuda.bindings import driver as drv
        _require_gpu()
        _ensure_context()
        mod = _check(drv.cuModuleLoadData(self.artifact.binary), "cuModuleLoadData")
        funcs = []
        for k in self.meta["kernels"]:
            f = _check(drv.cuModuleGetFunction(mod, k["entry"].encode()), f"cuModuleGetFunction({k['entry']})")
            if k["smem"] > 48 * 1024:
                _check(drv.cuFuncSetAttribute(
                    f, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k["smem"]),
                    f"raising {k['entry']}'s dynamic shared memory to {k['smem']} bytes")
            funcs.append(f)
        self._module = mod
        # per-call constants, computed once (the launch path is hot: keep it short)
        meta = self.meta
        names = meta.get("param_names") or [None] * len(meta["param_types"])
        self._params = list(zip(meta["param_types"], names))
        self._types = tuple(ctypes.c_void_p if cls == "buffer" else _CTYPES[dt] for cls, dt in meta["param_types"])
        self._align = {}
        for k in meta["kernels"]:
            for n, a in k.get("aligned", {}).items():
                self._align[n] = max(self._align.get(n, 1), a)
        self._grids = []
        for k in meta["kernels"]:
            codes = []
            for g in k["grid"]:
                try:
                    codes.append(int(g))
                except ValueError:
                    codes.append(compile(g, "<grid>", "eval"))
            self._grids.append(codes)
        return funcs

    def __call__(self, buffers, ints=(), floats=()):
        import torch
        from cuda.bindings import driver as drv
        if self._funcs is None:
            with self._lock:
                if self._funcs is None:
                    self._funcs = self._load()
        meta = self.meta
        if len(buffers) != meta["n_buffers"] or len(ints) != meta["n_ints"] or len(floats) != meta["n_floats"]:
            raise TypeError(f"kernel expects {meta['n_buffers']} tensors, {meta['n_ints']} ints and "
                            f"{meta['n_floats']} floats; got {len(buffers)}, {len(ints)}, {len(floats)}")
        ints = [int(i) for i in ints]
        env = {"ints": ints, "min": min, "max": max, "int": int}
        dev = None
        for b in buffers:
            if isinstance(b, torch.Tensor):
                dev = b.device
                break
        work = [torch.empty([eval(s, env) for s in w["shape"]], dtype=getattr(torch, w["dtype"]),  # noqa: S307
                            device=dev or "cuda") for w in meta["workspaces"]] if meta["workspaces"] else []
        values = []
        it_b, it_i, it_f = iter(list(buffers) + work), iter(ints), iter(floats)
        align = self._align
        for (cls, dt), name in self._params:
            if cls == "buffer":
                ptr = data_ptr(next(it_b))
                a = align.get(name, 1)
                if a > 1 and ptr % a:
                    raise CudaRuntimeError(f"tensor `{name}` starts at an address that is not {a}-byte "
                                           f"aligned, which the kernel's vectorized accesses need "
                                           f"(pass a fresh or .clone()d tensor)")
                values.append(ptr)
            elif cls == "int":
                values.append(next(it_i))
            else:
                values.append(float(next(it_f)))
        types = self._types
        stream = drv.CUstream(torch.cuda.current_stream(dev).cuda_stream)
        args = (tuple(values), types)
        for f, k, gcode in zip(self._funcs, meta["kernels"], self._grids):
            grid = [g if isinstance(g, int) else eval(g, env) for g in gcode]  # noqa: S307 - our own expressions
            if min(grid) <= 0:
                continue
            bx, by, bz = k["threads"]
            _check(drv.cuLaunchKernel(f, grid[0], grid[1], grid[2], bx, by, bz, k["smem"], stream, args, 0),
                   f"cuLaunchKernel({k['entry']})")


def load(artifact):
    return Launcher(artifact)
