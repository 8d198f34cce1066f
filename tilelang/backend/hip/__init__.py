"""The HIP backend for AMD CDNA GPUs (gfx90a, gfx940-942): HIP C++ from the tile IR
(LDS, MFMA, wavefront-64 shuffles), compiled by hipcc, launched through the HIP driver
API with ctypes. Targets "hip" / "rocm"; see target.py."""
from __future__ import annotations

from tilelang.backend import postproc
from tilelang.backend.base import Backend, Artifact
from tilelang.backend.registry import register
from tilelang.backend.hip import target as _target, pipeline as _pipeline, codegen as _codegen
from tilelang.backend.hip import compiler as _compiler, runtime as _runtime


class HIPBackend(Backend):
    name = "hip"

    def parse_target(self, kind, arch=None, options=None):
        return _target.parse_target(kind, arch, options)

    _available = None

    def device_available(self) -> bool:
        if self._available is None:   # asked by every target="auto": look once
            try:
                _runtime.default_driver()
                self._available = True
            except Exception:  # noqa: BLE001 - no library or no GPU: not available
                self._available = False
        return self._available

    def lower(self, func, target, ctx):
        return _pipeline.lower(func, target, ctx)

    def generate(self, func, target, ctx):
        lowered = self.lower(func, target, ctx)
        source, meta = _codegen.generate(lowered, target.arch)
        return lowered, postproc.apply("hip", source, target), meta

    def build(self, func, target, ctx):
        _, source, meta = self.generate(func, target, ctx)
        flags = tuple(ctx.get("compile_flags") or ()) if hasattr(ctx, "get") else ()
        binary, asm = _compiler.compile_source(source, target.arch, flags)
        meta = dict(meta, asm=asm)
        return Artifact(target, source, binary, meta["kernels"][0]["entry"], meta)

    def load(self, artifact):
        return _runtime.HipLauncher(artifact)

    def asm(self, artifact):
        """The device assembly (AMDGPU ISA) of the kernel."""
        return artifact.meta["asm"]

    def identity(self):
        return "hipcc:" + _compiler.hipcc_version() + postproc.identity("hip")


register("hip", HIPBackend())
