"""pytest plugin loaded into every published test file that `benchmarks/conformance.py` runs.

- `perf`-marked tests are skipped unless TL_CONFORMANCE_PERF=1 (the published conftest does
  the same; we do not load that conftest because it puts the published source tree on
  `sys.path`, which would import their `tilelang` instead of ours).
- TL_CONFORMANCE_MODE=cpu: an emulation for machines without a GPU. torch's CUDA tensors become
  CPU tensors (a TorchFunctionMode rewrites every `device="cuda"`, `.cuda()`, `.to("cuda")`),
  `torch.cuda.*` answers as one sm_90 device would, and target "cuda" compiles for our CPU
  backend (the reference semantics), after compiling it for sm_90a with NVRTC as well
  (TL_CONFORMANCE_CUDA_CHECK=0 skips that). It finds missing language, CUDA compile
  failures and wrong results without device time; tests that read generated CUDA source
  fail in it unless TL_CONFORMANCE_CUDA_SOURCE=1, which makes `get_kernel_source()` return the
  sm_90a CUDA source and `tilelang.lower(..., target=cuda)` lower with the CUDA backend (for the
  developer's loop on source checks). The H200 run is the
  measure, this mode is the developer's loop.
"""
from __future__ import annotations

import os

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "perf: benchmark tests (skipped unless TL_CONFORMANCE_PERF=1)")
    config.addinivalue_line("markers", "slow: long-running correctness sweeps")
    if os.environ.get("TL_CONFORMANCE_MODE") == "cpu":
        _emulate_cuda_on_cpu()


def pytest_collection_modifyitems(config, items):
    if os.environ.get("TL_CONFORMANCE_PERF") == "1":
        return
    skip = pytest.mark.skip(reason="performance test (the published suite skips these by default)")
    for item in items:
        if item.get_closest_marker("perf") is not None:
            item.add_marker(skip)


def _emulate_cuda_on_cpu():
    import types

    import torch
    from torch.overrides import TorchFunctionMode

    def cpu(d):
        if isinstance(d, torch.device):
            return torch.device("cpu") if d.type == "cuda" else d
        if isinstance(d, str) and d.startswith("cuda"):
            return "cpu"
        return d

    class CudaToCpu(TorchFunctionMode):
        def __torch_function__(self, func, types_, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is torch.Tensor.cuda:
                return args[0]
            if "device" in kwargs:
                kwargs["device"] = cpu(kwargs["device"])
            if func is torch.Tensor.to or func is torch.Tensor.type:
                args = tuple(cpu(a) for a in args)
            return func(*args, **kwargs)

    CudaToCpu().__enter__()   # active for the whole process
    real_generator = torch.Generator

    class Generator(real_generator):   # a type still, for annotations such as `Generator | None`
        def __new__(cls, device="cpu"):
            return real_generator(device=cpu(device))

    torch.Generator = Generator

    class Event:
        def __init__(self, *a, **k):
            self.t = 0.0

        def record(self, *a, **k):
            import time
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return (other.t - self.t) * 1e3

    class Stream:
        cuda_stream = 0

        def __init__(self, *a, **k):
            pass

        def synchronize(self):
            pass

        def wait_stream(self, *a):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    props = types.SimpleNamespace(name="NVIDIA H200 (emulated on the CPU)", major=9, minor=0,
                                  multi_processor_count=132, total_memory=141 << 30,
                                  shared_memory_per_block_optin=232448, L2_cache_size=60 << 20)
    c = torch.cuda
    c.is_available = lambda: True
    c.device_count = lambda: 1
    c.current_device = lambda: 0
    c.set_device = lambda *a, **k: None
    c.synchronize = lambda *a, **k: None
    c.empty_cache = lambda: None
    c.manual_seed = c.manual_seed_all = lambda *a, **k: None
    c.get_device_capability = lambda *a, **k: (9, 0)
    c.get_device_name = lambda *a, **k: props.name
    c.get_device_properties = lambda *a, **k: props
    c.Event = Event
    c.Stream = Stream
    c.current_stream = lambda *a, **k: Stream()
    c.default_stream = lambda *a, **k: Stream()
    c.stream = lambda s=None: Stream()
    c.is_initialized = lambda: True
    c.max_memory_allocated = c.memory_allocated = lambda *a, **k: 0
    c.reset_peak_memory_stats = lambda *a, **k: None

    from tilelang.backend import registry
    cuda = registry.get_backend("cuda")
    cpu_backend = registry.get_backend("cpu")
    registry._BACKENDS["cuda"] = cpu_backend
    if os.environ.get("TL_CONFORMANCE_CUDA_CHECK", "1") == "1":
        # every kernel is also compiled for sm_90a (NVRTC, no GPU needed): a kernel the
        # CUDA backend rejects or miscompiles fails here as it would on the H200
        from tilelang.transform.pass_manager import PassContext
        sm90 = registry.Target("cuda", "sm_90a", {})
        cpu_build = cpu_backend.build

        cuda_source = os.environ.get("TL_CONFORMANCE_CUDA_SOURCE") == "1"

        def build(func, target, ctx):
            config = dict(getattr(ctx, "config", None) or {})
            art = cuda.build(func, sm90, PassContext(config=config, target=sm90))
            out = cpu_build(func, target, ctx)
            if cuda_source:   # get_kernel_source() answers with the sm_90a CUDA source
                import dataclasses
                out = dataclasses.replace(out, source=art.source)
            return out
        cpu_backend.build = build
        if cuda_source:
            _lower_with_the_cuda_backend(registry, cuda, cpu_backend)


def _lower_with_the_cuda_backend(registry, cuda, cpu_backend):
    """`tilelang.lower(..., target=cuda ...)` answers with the CUDA backend's source for the
    requested arch (it lowers without running anything, so no GPU is needed)."""
    import tilelang
    import tilelang.engine.lower as L
    real_lower = L.lower

    def lower(func_or_mod, target="auto", *a, **k):
        spec = getattr(target, "spec", target)
        kind = str(spec.get("kind") if isinstance(spec, dict) else spec)
        if not (kind.startswith("cuda") or kind == "auto"):
            return real_lower(func_or_mod, target, *a, **k)
        registry._BACKENDS["cuda"] = cuda
        try:
            return real_lower(func_or_mod, target, *a, **k)
        finally:
            registry._BACKENDS["cuda"] = cpu_backend
    L.lower = tilelang.lower = lower
