"""The CPU backend: C++ from the tile-level IR, the system compiler, ctypes. It is
the reference implementation of TileLang's semantics (one CPU thread per block)."""
import time

from tilelang.backend import postproc
from tilelang.backend.base import Backend, Artifact
from tilelang.backend.registry import register
from tilelang.backend.cpu import target as _target, pipeline as _pipeline, codegen as _codegen
from tilelang.backend.cpu import compiler as _compiler, runtime as _runtime
from tilelang.ir.buffer import Buffer
from tilelang.transform.lower_trace import TracePage, trace_of


class CPUBackend(Backend):
    name = "cpu"

    def parse_target(self, kind, arch=None, options=None):
        return _target.parse_target(kind, arch, options)

    def lower(self, func, target, ctx):
        return _pipeline.lower(func, ctx)

    def generate(self, func, target, ctx):
        lowered = self.lower(func, target, ctx)
        t0 = time.perf_counter()
        source = postproc.apply("c", _codegen.generate(lowered, "tl_entry"), target)
        trace = trace_of(ctx, func)
        if trace is not None:   # the last page of the lower trace: what the backend prints
            trace.add(TracePage("cpp_source", "cpp", source, time.perf_counter() - t0, stage="cpu"))
        return lowered, source, {}

    def build(self, func, target, ctx):
        _, source, _ = self.generate(func, target, ctx)
        binary = _compiler.compile_source(source, ctx.get("compile_flags") or ())
        nb = sum(1 for p in func.params if isinstance(p, Buffer))
        return Artifact(target, source, binary, "tl_entry", {"num_buffers": nb})

    def load(self, artifact):
        return _runtime.CPULauncher(artifact)

    def identity(self):
        # TILELANG_CPU_EXTRA_FLAGS changes the binary (e.g. -fsanitize=address)
        import os
        env = ",".join(f"{k}={os.environ[k]}" for k in sorted(os.environ) if k.startswith("TILELANG_CPU_"))
        return _compiler.compiler_identity() + postproc.identity("c") + env


register("cpu", CPUBackend())
