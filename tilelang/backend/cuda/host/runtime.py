"""Load a cubin with the driver API and launch its kernels on torch's current
stream. The module is loaded on the first call (in the caller's CUDA context), so
building and loading work on machines without a GPU; calling does not.

The launch path is hot (a tiny kernel runs in ~2 us of GPU time), so after loading
each launcher generates one Python function specialised to its parameter list: it
reads the tensors' device pointers, checks the alignment the kernel's vector accesses
need, writes the values into preallocated ctypes storage whose addresses form the
`kernelParams` array, and calls `cuLaunchKernel` from `libcuda` through ctypes on the
raw handle of torch's current stream. Anything that path does not expect (a DLPack
array that is not a torch tensor, workspaces, a misaligned or CPU tensor, a wrong
number of arguments, a driver error) goes to the general path, which explains it.

Kernels that need more than grid, block and shared memory from their launch
(analysis/launch_config.py: a grid barrier, programmatic dependent launch) are launched with
`cuLaunchKernelEx` and the attributes they need (`LaunchEx`); every other kernel
keeps the plain `cuLaunchKernel` call. Thread-block clusters need neither: their
shape is compiled into the kernel."""
from __future__ import annotations

import ctypes
import re
import threading

from tilelang.backend.cuda.host import c_launch

_CTYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
           "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
           "uint64": ctypes.c_uint64, "bool": ctypes.c_bool, "float32": ctypes.c_float,
           "float64": ctypes.c_double, "handle": ctypes.c_uint64}

_CUDA_ERROR_INVALID_CONTEXT = 201


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


# the raw driver entry point, through ctypes (cuda-bindings' Python wrapper packs
# arguments with several microseconds of Python per call) -----------------------------
_LIBCUDA_FNS = {}
_LIBCUDA_LOCK = threading.Lock()


def _libcuda_fn(symbol, argtypes=None):
    """libcuda's `symbol` through ctypes (returning a C int), loaded once; None where the
    library or the symbol is missing. Without `argtypes` the caller passes ctypes objects
    and small Python ints: converting through argtypes costs ~0.7 us a launch."""
    if symbol not in _LIBCUDA_FNS:
        with _LIBCUDA_LOCK:
            if symbol not in _LIBCUDA_FNS:
                fn = None
                for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
                    try:
                        fn = getattr(ctypes.CDLL(name), symbol)
                        break
                    except (OSError, AttributeError):
                        continue
                if fn is not None:
                    fn.restype = ctypes.c_int
                    if argtypes is not None:
                        fn.argtypes = argtypes
                _LIBCUDA_FNS[symbol] = fn
    return _LIBCUDA_FNS[symbol]


def _libcuda_launch():
    """`cuLaunchKernel`, or None where libcuda cannot be loaded."""
    return _libcuda_fn("cuLaunchKernel")


def _libcuda_launch_ex():
    """`cuLaunchKernelEx`, or None."""
    return _libcuda_fn("cuLaunchKernelEx")


# cuda.h's CUlaunchAttributeID values and structs (CUlaunchAttribute: the id, padding to
# 8 bytes, a 64-byte union; CUlaunchConfig: seven uints, the stream, the attribute array
# and its length)
CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class _AttrValue(ctypes.Union):
    _fields_ = [("pad", ctypes.c_char * 64), ("i", ctypes.c_int), ("align", ctypes.c_uint64)]


class _LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _AttrValue)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttribute)), ("numAttrs", ctypes.c_uint)]


def launch_attributes(k) -> list:
    """[(CUlaunchAttributeID, int value)] that kernel metadata `k` asks for."""
    out = []
    if k.get("cooperative"):
        out.append((CU_LAUNCH_ATTRIBUTE_COOPERATIVE, 1))
    if k.get("pdl"):
        out.append((CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, 1))
    return out


class LaunchEx:
    """`cuLaunchKernelEx` with fixed attributes, called like `cuLaunchKernel`
    (f, grid x/y/z, block x/y/z, shared bytes, stream, params, extra). One config
    struct, reused: callers hold the launcher's lock."""

    def __init__(self, fn, attrs):
        self.fn = fn
        self.attrs = (_LaunchAttribute * max(1, len(attrs)))()
        for a, (aid, val) in zip(self.attrs, attrs):
            a.id = aid
            a.value.i = val
        self.config = _LaunchConfig()
        self.config.attrs = self.attrs
        self.config.numAttrs = len(attrs)
        self.ref = ctypes.byref(self.config)

    def __call__(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        c = self.config
        c.gridDimX, c.gridDimY, c.gridDimZ = gx, gy, gz
        c.blockDimX, c.blockDimY, c.blockDimZ = bx, by, bz
        c.sharedMemBytes = smem
        c.hStream = stream.value if isinstance(stream, ctypes.c_void_p) else stream
        return self.fn(self.ref, f, params, extra)


def _c_launch_extension(launch):
    """(the C extension module, `launch`'s address) when `launch` is a C function that
    ctypes calls (libcuda's cuLaunchKernel, or a test's fake) and the extension is
    available (c_launch.py); otherwise None: the generated ctypes call."""
    if not isinstance(launch, ctypes._CFuncPtr):
        return None
    ext = c_launch.extension()
    addr = ctypes.cast(launch, ctypes.c_void_p).value
    return (ext, addr) if ext is not None and addr else None


def _stream_getter():
    """device index -> raw handle (int) of torch's current stream on that device."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda dev: torch.cuda.current_stream(dev).cuda_stream


def _libcuda_encode():
    """`cuTensorMapEncodeTiled`, or None."""
    P64, P32 = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    return _libcuda_fn("cuTensorMapEncodeTiled", [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                                                  P64, P64, P32, P32, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                  ctypes.c_int])


class TensorMap:
    """A `const __grid_constant__ tl::CUtensorMap` kernel parameter: the CUtensorMap
    (128 bytes, 64-byte aligned) of a 2- to 5-D tensor for the kernel's bulk tensor
    copies (tma.py; extents, strides and box innermost first), 128-byte swizzle,
    zero fill out of bounds. Encoded again only when the tensor's address or shape
    changes."""
    _DTYPE = {1: 0, 2: 1, 4: 2, 8: 4}   # element bytes -> CU_TENSOR_MAP_DATA_TYPE_UINT8/16/32/64

    def __init__(self, spec):
        self.spec = spec
        self._raw = (ctypes.c_uint8 * 192)()
        self.address = (ctypes.addressof(self._raw) + 63) // 64 * 64
        self.key = None
        self.rank = n = len(spec["box"])
        self._dims = (ctypes.c_uint64 * n)()
        self._strides = (ctypes.c_uint64 * (n - 1))(*[int(b) for b in spec["strides"]])
        self._box = (ctypes.c_uint32 * n)(*[int(b) for b in spec["box"]])
        self._es = (ctypes.c_uint32 * n)(*([1] * n))

    def getPtr(self):  # noqa: N802 - cuda-bindings' kernel-parameter protocol
        return self.address

    def update(self, ptr, dims):
        key = (ptr, dims)
        if key == self.key:
            return
        if min(dims) <= 0:   # an empty tensor: no copy reads it
            self.key = key
            return
        for d, x in enumerate(dims):
            self._dims[d] = x
        # the element type (a reduction adds in it; copies only move bytes) and swizzle
        dt = int(self.spec.get("data_type", self._DTYPE[int(self.spec["elem_bytes"])]))
        sw = int(self.spec.get("swizzle", 3))
        # interleave NONE (0), swizzle (128B: 3, none: 0), L2 promotion 256B (3), OOB fill zeros (0)
        enc = _libcuda_encode()
        if enc is not None:
            err = enc(ctypes.c_void_p(self.address), dt, self.rank, ctypes.c_void_p(ptr), self._dims, self._strides,
                      self._box, self._es, 0, sw, 3, 0)
            if err:
                raise CudaRuntimeError(f"cuTensorMapEncodeTiled failed (error {err}) for a tensor at {ptr:#x} "
                                       f"of shape {list(reversed(dims))}, box {list(self.spec['box'])}")
        else:
            from cuda.bindings import driver as drv
            u64, u32 = drv.cuuint64_t, drv.cuuint32_t   # the bindings take their own integer types
            tm = _check(drv.cuTensorMapEncodeTiled(
                drv.CUtensorMapDataType(dt), self.rank, ptr, [u64(int(d)) for d in dims],
                [u64(int(b)) for b in self.spec["strides"]], [u32(int(b)) for b in self.spec["box"]],
                [u32(1)] * self.rank, drv.CUtensorMapInterleave(0), drv.CUtensorMapSwizzle(sw),
                drv.CUtensorMapL2promotion(3), drv.CUtensorMapFloatOOBfill(0)), "cuTensorMapEncodeTiled")
            ctypes.memmove(self.address, tm.getPtr(), 128)
        self.key = key


class Launcher:
    def __init__(self, artifact):
        self.artifact = artifact
        self.meta = artifact.meta
        self._funcs = None
        self._fast = None
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
            cl = k.get("cluster") or (1, 1, 1)
            if cl[0] * cl[1] * cl[2] > 8:
                _check(drv.cuFuncSetAttribute(
                    f, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                    f"allowing {k['entry']}'s clusters of {cl[0] * cl[1] * cl[2]} blocks")
            funcs.append(f)
        self._module = mod
        self._constants()
        self._caps = [self._resident_blocks(f, k) if k.get("cooperative") else None
                      for f, k in zip(funcs, self.meta["kernels"])]
        return funcs

    @staticmethod
    def _resident_blocks(f, k):
        """(blocks the GPU runs at once for kernel `k`, per SM, SMs): what a cooperative
        launch (T.sync_grid) may ask for."""
        import torch
        from cuda.bindings import driver as drv
        bx, by, bz = (int(t) for t in k["threads"])
        per_sm = _check(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(f, bx * by * bz, int(k["smem"])),
                        f"cuOccupancyMaxActiveBlocksPerMultiprocessor({k['entry']})")
        dev = _check(drv.cuDeviceGet(torch.cuda.current_device()), "cuDeviceGet")
        sms = _check(drv.cuDeviceGetAttribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute")
        return int(per_sm) * int(sms), int(per_sm), int(sms)

    def _constants(self):
        """Per-call constants, computed once."""
        meta = self.meta
        names = meta.get("param_names") or [None] * len(meta["param_types"])
        self._params = list(zip(meta["param_types"], names))
        self._types = tuple(ctypes.c_void_p if cls == "buffer" else _CTYPES[dt] for cls, dt in meta["param_types"])
        self._align = {}
        for k in meta["kernels"]:
            for n, a in k.get("aligned", {}).items():
                self._align[n] = max(self._align.get(n, 1), a)
        # per kernel: [(TensorMap, buffer index, [dim expression over ints])]
        self._tmaps = [[(TensorMap(t), int(t["buffer"]), list(t["dims"])) for t in k.get("tmaps", ())]
                       for k in meta["kernels"]]
        self._grids = []
        for k in meta["kernels"]:
            codes = []
            for g in k["grid"]:
                try:
                    codes.append(int(g))
                except ValueError:
                    codes.append(compile(g, "<grid>", "eval"))
            self._grids.append(codes)
        # cooperative kernels: (resident blocks, per SM, SMs), known once loaded
        self._caps = [None] * len(meta["kernels"])

    def _prepare(self):
        """Load the module (once) and build the fast launch function."""
        with self._lock:
            if self._fast is None:
                if self._funcs is None:
                    self._funcs = self._load()
                launch = _libcuda_launch()
                fast = None
                if launch is not None:
                    fast = self._build_fast(launch, [int(f) for f in self._funcs], _stream_getter())
                self._fast = fast or self._general
        return self._fast

    def __call__(self, buffers, ints=(), floats=()):
        fast = self._fast
        if fast is None:
            fast = self._prepare()
        return fast(buffers, ints, floats)

    def positional(self):
        """The launch as a function of positional arguments (tensors, then ints, then
        floats, in the order of `__call__`'s lists): no list to build or unpack. For
        callers that launch the same signature many times (JITKernel's fast path).
        Loads the module."""
        fast = self._fast or self._prepare()
        return getattr(fast, "positional", None) or self._general_positional

    def positional_checked(self):
        """`positional()` for a caller that has checked that every tensor argument is a
        torch CUDA tensor (JITKernel's fast path): the same launch without that test."""
        fast = self._fast or self._prepare()
        return getattr(fast, "positional_checked", None) or self._general_positional

    def _general_positional(self, *args):
        nb, ni = self.meta["n_buffers"], self.meta["n_ints"]
        return self._general(list(args[:nb]), args[nb:nb + ni], args[nb + ni:])

    # the specialised path ----------------------------------------------------------
    def _build_fast(self, launch, handles, get_stream, launch_ex=None):
        """A function (buffers, ints, floats) -> None for this parameter list (its
        attribute `positional`: the same taking (*buffers, *ints, *floats)), or None
        when the general path must run every call (workspaces). `launch_ex`:
        cuLaunchKernelEx, for the kernels that need launch attributes (default:
        libcuda's)."""
        meta = self.meta
        if meta["workspaces"]:
            return None
        if any(launch_attributes(k) for k in meta["kernels"]):
            launch_ex = launch_ex or _libcuda_launch_ex()
            if launch_ex is None:
                return None
        nb, ni, nf = meta["n_buffers"], meta["n_ints"], meta["n_floats"]
        storage = [t() for t in self._types]
        params = (ctypes.c_void_p * max(1, len(storage)))(*[ctypes.addressof(v) for v in storage])
        g = {"__name__": "tilelang.backend.cuda._launch", "launch": launch, "get_stream": get_stream,
             "lock": self._lock, "general": self._general, "failed": self._launch_failed, "params": params,
             "min": min, "max": max, "int": int, "sv": ctypes.c_void_p(), "ArgumentError": ctypes.ArgumentError}
        bs = [f"b{k}" for k in range(nb)]
        is_ = [f"i{k}" for k in range(ni)]
        fs = [f"f{k}" for k in range(nf)]
        gen = "return general(buffers, ints, floats)"
        # the body, over b*, i*, f*; GEN is how to give up to the general path
        body = ["    try:"]
        if nb:
            body.append(f"        if not ({' and '.join(b + '.is_cuda' for b in bs)}): GEN")
            for b in bs:
                body.append(f"        p{b[1:]} = {b}.data_ptr()")
            body.append("        dev = b0.get_device()")
        else:
            body.append("        import torch")
            body.append("        dev = torch.cuda.current_device()")
        body.append("    except (AttributeError, TypeError, ValueError):")
        body.append("        GEN")
        sets, values, aligned = [], [], {}
        it_b = it_i = it_f = 0
        for slot, ((cls, dt), name) in enumerate(self._params):
            g[f"v{slot}"] = storage[slot]
            if cls == "buffer":
                a = self._align.get(name, 1)
                if a > 1:  # the alignment the kernels' vector accesses need
                    aligned.setdefault(a, []).append(f"p{it_b}")
                sets.append(f"v{slot}.value = p{it_b}")
                values.append(f"p{it_b}")
                it_b += 1
            elif cls == "int":
                sets.append(f"v{slot}.value = i{it_i}")
                values.append(f"i{it_i}")
                it_i += 1
            else:
                sets.append(f"v{slot}.value = f{it_f}")
                values.append(f"f{it_f}")
                it_f += 1
        if (it_b, it_i, it_f) != (nb, ni, nf):  # the metadata disagrees with itself
            return None
        for a, ps in sorted(aligned.items()):   # one test per alignment: the pointers' low bits together
            body.append(f"    if ({' | '.join(ps)}) & {a - 1}: GEN" if a & (a - 1) == 0 else
                        f"    if {' or '.join(f'{p} % {a}' for p in ps)}: GEN")
        body.append("    stream = get_stream(dev)")
        # the C extension's Launch objects (c_launch.py): one call a kernel, no lock, no ctypes
        c_ext = _c_launch_extension(launch) if not any(launch_attributes(k) for k in meta["kernels"]) else None
        launches = []
        for j, (k, gcode) in enumerate(zip(meta["kernels"], self._grids)):
            g[f"F{j}"] = ctypes.c_void_p(handles[j])
            bx, by, bz = (int(t) for t in k["threads"])
            smem = int(k["smem"])
            dims, dyn = [], []
            for d, c in enumerate(gcode):
                if isinstance(c, int):
                    dims.append(str(c))
                else:
                    expr = re.sub(r"\bints\[(\d+)\]", r"i\1", k["grid"][d])
                    body.append(f"    g{j}_{d} = {expr}")
                    dims.append(f"g{j}_{d}")
                    dyn.append(f"g{j}_{d}")
            if not dyn and min(int(x) for x in dims) <= 0:
                continue  # an empty grid: nothing to launch
            # what the general path explains: a grid of partial clusters, a cooperative
            # grid larger than what the GPU holds at once
            cl = k.get("cluster")
            if cl and dyn:
                for d, c in enumerate(cl):
                    if c > 1 and not isinstance(gcode[d], int):
                        body.append(f"    if g{j}_{d} % {c}: GEN")
            if self._caps[j] is not None:
                body.append(f"    if {' * '.join(dims)} > {self._caps[j][0]}: GEN")
            fn = "launch"
            attrs = launch_attributes(k)
            if attrs:
                fn = f"L{j}"
                g[fn] = LaunchEx(launch_ex, attrs)
            pj = "params"
            pre = []
            if self._tmaps[j]:
                pj = f"params{j}"
                g[pj] = (ctypes.c_void_p * (len(storage) + len(self._tmaps[j])))(
                    *([ctypes.addressof(v) for v in storage] + [tm.address for tm, _, _ in self._tmaps[j]]))
                for n, (tm, bi, dexprs) in enumerate(self._tmaps[j]):
                    g[f"T{j}_{n}"] = tm
                    dt = ", ".join(re.sub(r"\bints\[(\d+)\]", r"i\1", d) for d in dexprs)
                    pre.append(f"T{j}_{n}.update(p{bi}, ({dt},))")
            call = f"{fn}(F{j}, {', '.join(dims)}, {bx}, {by}, {bz}, {smem}, sv, {pj}, None)"
            if c_ext is not None:
                kinds = "".join("p" if cls == "buffer" else c_launch.KINDS[dt] for cls, dt in meta["param_types"])
                g[f"C{j}"] = c_ext[0].Launch(c_ext[1], int(handles[j]), bx, by, bz, smem, kinds,
                                              tuple(tm.address for tm, _, _ in self._tmaps[j]))
                call = f"C{j}({', '.join(dims)}, stream, {', '.join(values)})"
            launches.append((j, call, " and ".join(f"{x} > 0" for x in dyn), pre))
        if c_ext is not None:
            # the tensor maps are shared state: their update and the launch that reads them
            # under the lock; otherwise one C call holding the GIL needs none
            tmaps = any(pre for _, _, _, pre in launches)
            ind = "    "
            if tmaps:
                body.append("    with lock:")
                ind = "        "
            for j, call, cond, pre in launches:
                i2 = ind
                if cond:
                    body.append(f"{i2}if {cond}:")
                    i2 += "    "
                for ln in pre:
                    body.append(f"{i2}{ln}")
                body.append(f"{i2}try:")
                body.append(f"{i2}    r = {call}")
                body.append(f"{i2}except (TypeError, OverflowError):  # a value the parameter's C type cannot take")
                body.append(f"{i2}    GEN")
                body.append(f"{i2}if r: return failed(r, {j}, buffers, ints, floats)")
            launches = []
        else:
            body.append("    with lock:")
            body.append("        try:")
            body.append("            sv.value = stream")
            for st in sets:
                body.append(f"            {st}")
            body.append("        except TypeError:")
            body.append("            GEN")
        for j, call, cond, pre in launches:
            ind = "        "
            if cond:
                body.append(f"{ind}if {cond}:")
                ind += "    "
            for ln in pre:
                body.append(f"{ind}{ln}")
            body.append(f"{ind}try:")
            body.append(f"{ind}    r = {call}")
            body.append(f"{ind}except ArgumentError:  # a size that does not fit a C int")
            body.append(f"{ind}    r = 1  # CUDA_ERROR_INVALID_VALUE")
            body.append(f"{ind}if r: return failed(r, {j}, buffers, ints, floats)")

        def tup(xs):
            return "(" + "".join(x + ", " for x in xs) + ")"
        lists = f"buffers, ints, floats = [{', '.join(bs)}], {tup(is_)}, {tup(fs)}"
        # fast(buffers, ints, floats)
        lines = ["def fast(buffers, ints, floats):", "    try:"]
        for names, what in ((bs, "buffers"), (is_, "ints"), (fs, "floats")):
            if names:
                lines.append(f"        {', '.join(names)}, = {what}")
            else:
                lines.append(f"        if len({what}): {gen}")
        lines.append("    except (TypeError, ValueError):")
        lines.append(f"        {gen}")
        lines += [ln.replace("GEN", gen) for ln in body]
        # fastp(*buffers, *ints, *floats): the lists only when giving up
        lines.append("")
        lines.append(f"def fastp({', '.join(bs + is_ + fs)}):")
        lines += [ln.replace("GEN", f"{lists}; {gen}") for ln in body]
        # fastc: the same for a caller that checked every tensor is a CUDA tensor already
        # (JITKernel's fast path: its inputs checked, its outputs allocated beside them)
        lines.append("")
        lines.append(f"def fastc({', '.join(bs + is_ + fs)}):")
        lines += [ln.replace("GEN", f"{lists}; {gen}") for ln in body if ".is_cuda" not in ln]
        src = "\n".join(lines) + "\n"
        # fastp's failure path needs the lists too
        out, in_p = [], False
        for ln in src.split("\n"):
            if ln.startswith("def fastp"):
                in_p = True
            if in_p and "return failed(r, " in ln:
                ind = ln[:len(ln) - len(ln.lstrip())]
                ln = ln.replace("if r: return failed(", f"if r:\n{ind}    {lists}\n{ind}    return failed(")
            out.append(ln)
        src = "\n".join(out)
        exec(compile(src, f"<tilelang launch {self.artifact.entry}>", "exec"), g)  # noqa: S102 - our own code
        fast = g["fast"]
        fast.positional = g["fastp"]
        fast.positional_checked = g["fastc"]
        fast.source = src
        return fast

    def _launch_failed(self, err, j, buffers, ints, floats):
        """The driver refused a launch on the fast path: a thread without the context
        gets it made current and the launch repeated; anything else is explained."""
        if err == _CUDA_ERROR_INVALID_CONTEXT:
            _ensure_context()
            return self._general(buffers, ints, floats)
        k = self.meta["kernels"][j]
        env = {"ints": [int(i) for i in ints], "min": min, "max": max, "int": int}
        grid = [g if isinstance(g, int) else eval(g, env) for g in self._grids[j]]  # noqa: S307 - our own expressions
        check_launch(k, grid, self._caps[j])   # a grid CUDA cannot launch: say which extent and what to do
        what = f"cuLaunchKernelEx({k['entry']})" if launch_attributes(k) else f"cuLaunchKernel({k['entry']})"
        raise CudaRuntimeError(_launch_error(k, err, what))

    # the general path: any DLPack array, workspaces, every error explained ----------
    def _general(self, buffers, ints=(), floats=()):
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
        grids = [[g if isinstance(g, int) else eval(g, env) for g in gcode]  # noqa: S307 - our own expressions
                 for gcode in self._grids]
        for k, grid, cap in zip(meta["kernels"], grids, self._caps):
            if min(grid) > 0:   # before any launch: all of the function's kernels or none
                check_launch(k, grid, cap)
        for f, k, grid, tms in zip(self._funcs, meta["kernels"], grids, self._tmaps):
            if min(grid) <= 0:
                continue
            bx, by, bz = k["threads"]
            kargs = args
            if tms:
                for tm, bi, dexprs in tms:
                    tm.update(values[bi], tuple(eval(d, env) for d in dexprs))  # noqa: S307 - our own expressions
                kargs = (args[0] + tuple(tm for tm, _, _ in tms), args[1] + (None,) * len(tms))
            attrs = launch_attributes(k)
            if attrs:
                cfg = drv.CUlaunchConfig()
                cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
                cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = bx, by, bz
                cfg.sharedMemBytes = k["smem"]
                cfg.hStream = stream
                cfg.attrs = [_driver_attribute(drv, aid, val) for aid, val in attrs]
                cfg.numAttrs = len(attrs)
                res = drv.cuLaunchKernelEx(cfg, f, kargs, 0)
                what = f"cuLaunchKernelEx({k['entry']})"
            else:
                res = drv.cuLaunchKernel(f, grid[0], grid[1], grid[2], bx, by, bz, k["smem"], stream, kargs, 0)
                what = f"cuLaunchKernel({k['entry']})"
            err = res[0] if isinstance(res, tuple) else res
            if err != drv.CUresult.CUDA_SUCCESS:
                raise CudaRuntimeError(_launch_error(k, int(err), what))


def _driver_attribute(drv, aid, val):
    a = drv.CUlaunchAttribute()
    a.id = drv.CUlaunchAttributeID(aid)
    if aid == CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        a.value.cooperative = val
    else:
        a.value.programmaticStreamSerializationAllowed = val
    return a


GRID_LIMITS = (2 ** 31 - 1, 65535, 65535)   # blocks along x, y, z (every GPU since sm_30)


def check_launch(k, grid, cap):
    """Explain a launch of kernel `k` (metadata) on `grid` that cannot run: a grid
    that is not a whole number of clusters, a cooperative grid (T.sync_grid) larger
    than what the GPU runs at once (`cap`: (blocks, per SM, SMs) or None)."""
    for ax, (g, most) in enumerate(zip(grid, GRID_LIMITS)):
        if g > most:
            raise CudaRuntimeError(
                f"kernel `{k['entry']}` has a grid of {tuple(grid)} blocks, but CUDA allows at most {most} blocks "
                f"along {'xyz'[ax]} (T.Kernel's {('first', 'second', 'third')[ax]} extent): put the largest extent "
                f"first (x allows {GRID_LIMITS[0]}) or give each block more work")
    cl = k.get("cluster")
    if cl:
        for ax, (g, c) in enumerate(zip(grid, cl)):
            if g % c:
                raise CudaRuntimeError(
                    f"kernel `{k['entry']}` runs in thread-block clusters of {tuple(cl)} blocks, but its grid "
                    f"{tuple(grid)} has {g} blocks along {'xyz'[ax]}, not a multiple of {c}: pass sizes that give "
                    f"a whole number of clusters (or round the grid up and skip the extra blocks' work)")
    if cap is not None and grid[0] * grid[1] * grid[2] > cap[0]:
        t = k["threads"]
        raise CudaRuntimeError(
            f"kernel `{k['entry']}` uses T.sync_grid(), so all of its blocks must run at once, but its grid "
            f"{tuple(grid)} has {grid[0] * grid[1] * grid[2]} blocks and this GPU holds at most {cap[0]} "
            f"({cap[1]} per SM x {cap[2]} SMs with {t[0] * t[1] * t[2]} threads and {k['smem']} bytes of "
            f"shared memory per block): use a grid of at most {cap[0]} blocks (e.g. a persistent loop over the "
            f"tiles), fewer threads or less shared memory per block")


def _launch_error(k, err, what):
    from cuda.bindings import driver as drv
    try:
        name = drv.CUresult(err).name
    except ValueError:
        name = f"error {err}"
    try:
        _, text = drv.cuGetErrorString(drv.CUresult(err))
        text = text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # noqa: BLE001 - the message without the driver's text
        text = ""
    msg = f"{what} failed: {name}" + (f": {text}" if text else "")
    cl = k.get("cluster")
    if cl and name in ("CUDA_ERROR_INVALID_CLUSTER_SIZE", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                       "CUDA_ERROR_INVALID_VALUE"):
        msg += (f" (the kernel runs in clusters of {tuple(cl)} blocks: the grid must be a whole number of "
                f"clusters, and a cluster's blocks, with their threads and shared memory, must fit on the "
                f"SMs of one GPC)")
    if k.get("cooperative") and name == "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE":
        msg += " (T.sync_grid: every block of the grid must be resident at once; use a smaller grid)"
    return msg


def fake_driver_for_benchmarks(launcher, launch=None, stream=0, launch_ex=None):
    """Prepare `launcher` to run its fast path without a GPU: kernel handles 0, the
    driver call replaced by `launch` (same arguments as cuLaunchKernel; default: a
    no-op returning 0), cuLaunchKernelEx by `launch_ex` (config pointer, function,
    params, extra; default: a no-op) and the current stream by `stream`. For timing
    the Python side of a launch and testing the argument packing on machines without
    a GPU."""
    launcher._constants()
    launcher._funcs = [0] * len(launcher.meta["kernels"])
    launcher._fast = launcher._build_fast(launch or (lambda *a: 0), launcher._funcs, lambda dev: stream,
                                          launch_ex or (lambda *a: 0))
    return launcher._fast


def load(artifact):
    return Launcher(artifact)
