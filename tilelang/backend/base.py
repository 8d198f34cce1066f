"""What every backend provides (see `registry.py`)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Artifact:
    """A compiled kernel function: picklable, stored in the kernel cache."""
    target: object                 # registry.Target
    source: str                    # generated source (C++ / CUDA C++)
    binary: bytes                  # shared object (CPU) / cubin (CUDA)
    entry: str                     # symbol name of the entry point
    meta: dict = field(default_factory=dict)   # backend-specific launch info (grid, smem, ...)


class Backend:
    name = "base"

    def parse_target(self, kind, arch, options):
        raise NotImplementedError

    def device_available(self) -> bool:
        return True

    def lower(self, func, target, ctx):
        """Run the backend's pass pipeline (generic passes included)."""
        raise NotImplementedError

    def generate(self, func, target, ctx):
        """lower -> codegen: (lowered PrimFunc, source, meta), no compiler run
        (`tilelang.lower`)."""
        raise NotImplementedError

    def build(self, func, target, ctx) -> Artifact:
        """lower -> codegen -> compile."""
        raise NotImplementedError

    def load(self, artifact: Artifact):
        """A launcher: `launcher(buffers, ints, floats)` runs the function, where
        `buffers` are the tensors for the function's Buffer params (in order), `ints`
        the int scalar params then the dynamic shape variables
        (`PrimFunc.dynamic_vars()` order), `floats` the float scalar params."""
        raise NotImplementedError
