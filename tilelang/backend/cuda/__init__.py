"""The CUDA backend: CUDA C++ from the tile IR, NVRTC to cubin, driver-API launch.
Map of the folder: ARCHITECTURE.md."""
from __future__ import annotations

import dataclasses
import os
import time

from tilelang.backend import postproc
from tilelang.backend.base import Artifact, Backend
from tilelang.backend.registry import register
from tilelang.backend.cuda import target as _target
from tilelang.backend.cuda import pipeline as _pipeline
from tilelang.backend.cuda.options import OPTIONS, CudaOptions, switches_identity
from tilelang.transform.pass_manager import PassContext
from tilelang.transform.lower_trace import TracePage, current_setting, trace_of


def _sass_or_why(cubin):
    """The SASS page of the lower trace, or why there is none (no cuobjdump here)."""
    from tilelang.backend.cuda.host.nvrtc import sass
    try:
        return sass(cubin)
    except RuntimeError as e:
        return f"// no SASS: {e}\n"

class CudaBackend(Backend):
    name = "cuda"

    def parse_target(self, kind, arch, options):
        return _target.parse_target(kind, arch, options)

    def device_available(self) -> bool:
        return _target.device_count() > 0

    def sass(self, artifact) -> str:
        """`kernel.get_sass()`: the cubin's SASS (needs cuobjdump, no GPU)."""
        from tilelang.backend.cuda.host.nvrtc import sass
        return sass(artifact.binary)

    def identity(self) -> str:
        """What a cubin depends on besides the source: the NVRTC version (cache key)."""
        try:
            from cuda.bindings import nvrtc
            err, major, minor = nvrtc.nvrtcVersion()
            nv = f"nvrtc-{major}.{minor}"
        except Exception:  # noqa: BLE001
            nv = "nvrtc-unknown"
        # the environment switches that change the generated code or the cubin (options.py)
        return nv + postproc.identity("cuda") + switches_identity()

    def lower(self, func, target, ctx):
        return _pipeline.lower(func, target, ctx)

    def generate(self, func, target, ctx=None):
        from tilelang.backend.cuda.emit.module import generate
        if isinstance(target, str) or isinstance(target, dict):
            from tilelang.backend.registry import parse_target
            target = parse_target(target)
        if ctx is None or isinstance(ctx, dict):
            ctx = PassContext(config=dict(ctx or {}))
        # the compile's options, read once: the passes, the planner, codegen and NVRTC share them
        options = CudaOptions.from_config(ctx.config, target.arch)
        setting = current_setting(ctx.config)
        if setting is not None and not options.lower_trace:   # a trace asked for in code (the pass viewer)
            options = dataclasses.replace(options, lower_trace=setting.mode)
        ctx.config[OPTIONS] = options
        lowered = self.lower(func, target, ctx)
        t0 = time.perf_counter()
        source, meta = generate(lowered, target, options)
        codegen_s = time.perf_counter() - t0
        source = postproc.apply("cuda", source, target)
        plan_pages = meta.pop("plan_pages", [])
        trace = trace_of(ctx, func)
        if trace is not None:   # the last pages of the lower trace: the decisions, what the backend prints
            for entry, text, layouts in plan_pages:
                trace.add(TracePage(f"cuda_plan_{entry}", "plan", text, stage="cuda", layouts=layouts))
            trace.add(TracePage("cuda_source", "cuda", source, codegen_s, stage="cuda"))
        dump = options.dump_dir
        if dump:
            os.makedirs(dump, exist_ok=True)
            with open(os.path.join(dump, f"{func.name}.cu"), "w") as f:
                f.write(source)
        return lowered, source, meta

    def build(self, func, target, ctx=None) -> Artifact:
        from tilelang.backend.cuda.host.nvrtc import compile_cuda
        from tilelang.backend.cuda.plan.occupancy import (spilling_entries, drop_streaming_caps, fit_streaming_caps,
                                                          streaming_cap)
        if isinstance(target, str) or isinstance(target, dict):
            from tilelang.backend.registry import parse_target
            target = parse_target(target)
        if ctx is None or isinstance(ctx, dict):
            ctx = PassContext(config=dict(ctx or {}))
        _, source, meta = self.generate(func, target, ctx)
        t0 = time.perf_counter()
        capped = [k["entry"] for k in meta["kernels"] if k.get("streaming_occupancy")]
        compiled = compile_cuda(source, target.arch, name=f"{func.name}.cu", options=ctx.config[OPTIONS],
                                extra_options=("-Xptxas=-v",) if capped else ())
        spilled = spilling_entries(compiled.log) & set(capped)
        if spilled and ctx.config[OPTIONS].occupancy_search:
            # the occupancy cap (plan/occupancy.py) made ptxas spill: the most blocks that do not
            def spills(src):
                c = compile_cuda(src, target.arch, name=f"{func.name}.cu", options=ctx.config[OPTIONS],
                                 extra_options=("-Xptxas=-v",))
                return spilling_entries(c.log), c
            fitted, fitted_compiled = fit_streaming_caps(source, spilled, spills)
            meta["streaming_occupancy_fitted"] = {e: streaming_cap(fitted, e) for e in sorted(spilled)}
            source = fitted
            compiled = fitted_compiled or compile_cuda(source, target.arch, name=f"{func.name}.cu",
                                                       options=ctx.config[OPTIONS])
        elif spilled:   # ... or compile without it
            source = drop_streaming_caps(source, spilled)
            compiled = compile_cuda(source, target.arch, name=f"{func.name}.cu", options=ctx.config[OPTIONS])
            meta["streaming_occupancy_dropped"] = sorted(spilled)
        nvrtc_s = time.perf_counter() - t0
        _report_serialized_wgmma(compiled.log, meta)
        meta["ptx"] = compiled.ptx
        trace = trace_of(ctx, func)
        if trace is not None:
            trace.add(TracePage("ptx", "ptx", compiled.ptx, nvrtc_s, stage="nvrtc"))
            trace.add(TracePage("sass", "sass", _sass_or_why(compiled.cubin), stage="cuobjdump"))
        meta["arch"] = target.arch
        return Artifact(target, source, compiled.cubin, meta["kernels"][0]["entry"], meta)

    def load(self, artifact: Artifact):
        from tilelang.backend.cuda.host.runtime import load
        return load(artifact)


def _report_serialized_wgmma(log, meta):
    """A warning (and meta["serialized_wgmma"]) for each kernel whose wgmma ptxas serialized."""
    import warnings
    from tilelang.backend.cuda.host.nvrtc import serialized_wgmma
    found = serialized_wgmma(log)
    if found:
        meta["serialized_wgmma"] = {k: why for k, why in found}
    for kernel, why in found:
        warnings.warn(f"{kernel}: ptxas serialized its wgmma instructions ({why}): each waits for the one before, "
                      f"so the kernel is correct but slow. Usual causes: a branch on the thread index that ptxas "
                      f"cannot see is warp-uniform around code holding wgmma accumulators, or too few registers "
                      f"for them; TL_LOWER_TRACE=<dir> writes the CUDA source and SASS to look at", stacklevel=3)


backend = CudaBackend()
register("cuda", backend)
