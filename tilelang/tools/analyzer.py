"""`tilelang.tools.Analyzer` (published call shape): a roofline estimate of a kernel from
its tile-level IR -- the tensor-core FLOPs of its `T.gemm`s, the bytes it moves to and
from global memory (`T.copy` tiles, element loads and stores of global tensors), and the
time the slower of the two takes on a device at its datasheet peak.

    result = Analyzer.analysis(kernel.get_tir(...), CUDA("cuda"))   # or device="H200"

Counts are per launch: every block, every iteration of every loop around the op (both
branches of an `if`: an upper bound). Loop extents must be constants."""
from __future__ import annotations

import logging
from dataclasses import dataclass

from tilelang.ir.visitor import Visitor

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeviceFigures:
    """Datasheet peaks: dense fp16/bf16 tensor-core TFLOPS and memory bandwidth (GB/s)."""
    name: str
    tensor_tflops: float
    bandwidth_GBps: float


# SXM parts, dense (no sparsity): NVIDIA's H100 / H200 / A100 datasheets
DEVICES = {
    "H200": DeviceFigures("H200", 989.4, 4800.0),
    "H100": DeviceFigures("H100", 989.4, 3350.0),
    "A100": DeviceFigures("A100", 312.0, 2039.0),
}
_BY_SM = {90: "H100", 80: "A100"}   # a device known only by its compute capability


def device_figures(device) -> DeviceFigures:
    """The figures of `device`: a name ("H200"), DeviceFigures, or a carver `CUDA`
    object (its GPU's name when a GPU is visible, else its compute capability)."""
    if isinstance(device, DeviceFigures):
        return device
    if isinstance(device, str):
        for key, fig in DEVICES.items():
            if key in device.upper():
                return fig
        raise ValueError(f"Analyzer: unknown device {device!r}; known: {', '.join(DEVICES)} "
                         f"(or pass DeviceFigures(name, tensor_tflops, bandwidth_GBps))")
    name = getattr(device, "name", None) or _gpu_name()
    if name:
        for key, fig in DEVICES.items():
            if key in str(name).upper():
                return fig
    sm = getattr(device, "sm_version", None)
    if sm in _BY_SM:
        return DEVICES[_BY_SM[sm]]
    raise ValueError(f"Analyzer: no figures for device {device!r} (compute capability {sm}); pass a name "
                     f"({', '.join(DEVICES)}) or DeviceFigures(...)")


def _gpu_name():
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - no torch / no GPU: the compute capability decides
        pass
    return None


@dataclass(frozen=True)
class AnalysisResult:
    """Published fields first (FLOPs, global bytes, estimated seconds, the device's peak
    TFLOPS and GB/s), then the two roofline times and which one bounds the kernel."""
    total_flops: int
    total_global_bytes: int
    estimated_time: float
    expected_tflops: float
    expected_bandwidth_GBps: float
    compute_time: float = 0.0
    memory_time: float = 0.0
    bound: str = "memory"
    device: str = ""

    @property
    def arithmetic_intensity(self):
        """FLOPs per byte of global memory traffic."""
        return self.total_flops / self.total_global_bytes if self.total_global_bytes else float("inf")


class Analyzer:
    def __init__(self, fn, device):
        from tilelang.ir.function import PrimFunc
        fn = getattr(fn, "prim_func", fn)   # a JITKernel
        if isinstance(fn, dict):            # an IRModule-like {name: PrimFunc}
            fn = next((f for f in fn.values() if isinstance(f, PrimFunc)), None)
        if not isinstance(fn, PrimFunc):
            raise TypeError(f"Analyzer: expected a PrimFunc or a compiled kernel, got {type(fn).__name__}")
        self.fn = fn
        self.device = device
        self.total_flops = 0
        self.total_global_bytes = 0

    def ir_pass(self):
        """Count the FLOPs and global bytes of the kernel (published name)."""
        counter = _Counter()
        counter.visit(self.fn.body)
        self.total_flops, self.total_global_bytes = counter.flops, counter.bytes
        return self

    def calculate(self) -> AnalysisResult:
        fig = device_figures(self.device)
        compute = self.total_flops / (fig.tensor_tflops * 1e12)
        memory = self.total_global_bytes / (fig.bandwidth_GBps * 1e9)
        return AnalysisResult(self.total_flops, self.total_global_bytes, max(compute, memory), fig.tensor_tflops,
                              fig.bandwidth_GBps, compute, memory, "compute" if compute >= memory else "memory",
                              fig.name)

    @classmethod
    def analysis(cls, fn, device) -> AnalysisResult:
        return cls(fn, device).ir_pass().calculate()


def _const(x, what):
    from tilelang.ir.expr import const_int_value, convert
    from tilelang.arith.simplify import simplify
    v = x if isinstance(x, int) else const_int_value(simplify(convert(x)))
    if v is None:
        raise ValueError(f"Analyzer: {what} {x} is not a constant; analyze a kernel with static shapes")
    return v


def _region_elems(region):
    n = 1
    for _, ext in region.ranges:
        n *= _const(ext, "the copy extent")
    return n


def _gemm_flops(g):
    """2 M N K of one T.gemm from its operand regions' shapes."""
    def dims(r):
        ext = [_const(e, "the gemm extent") for _, e in r.ranges]
        ext = [e for e in ext if e != 1] or [1]
        return ext[-2] if len(ext) > 1 else 1, ext[-1]
    m, n = dims(g.C)
    a_rows, a_cols = dims(g.A)
    k = a_rows if g.trans_A else a_cols
    return 2 * m * n * k


class _Counter(Visitor):
    """Walks the body with the number of times the current statement runs per launch."""

    def __init__(self):
        self.times = 1
        self.flops = 0
        self.bytes = 0

    def _under(self, factor, *nodes):
        saved = self.times
        self.times *= factor
        for n in nodes:
            self.visit(n)
        self.times = saved

    def visit_KernelLaunch(self, k):
        blocks = 1
        for g in k.grid:
            blocks *= _const(g, "the grid extent")
        self._under(blocks, k.body)

    def visit_For(self, f):
        self._under(_const(f.extent, f"the extent of loop `{f.var.name}`"), f.body)

    def visit_Copy(self, c):
        for side in (c.src, c.dst):
            if side.buffer.scope == "global":
                self.bytes += _region_elems(side) * side.buffer.dtype.itemsize * self.times

    def visit_Gemm(self, g):
        self.flops += _gemm_flops(g) * self.times

    def visit_BufferStore(self, s):
        if s.buffer.scope == "global":
            self.bytes += s.buffer.dtype.itemsize * self.times
        self.generic_visit(s)

    def visit_BufferLoad(self, ld):
        if ld.buffer.scope == "global":
            self.bytes += ld.buffer.dtype.itemsize * self.times
        self.generic_visit(ld)
