"""HIP targets for AMD CDNA GPUs: "hip", "hip -arch=gfx90a", {"kind": "hip", "arch": "gfx940"},
and the published spelling "rocm". With no arch: gfx90a (MI200), the first target."""
from __future__ import annotations

import re

from tilelang.backend.registry import Target

DEFAULT_ARCH = "gfx90a"
# CDNA2 (MI200) and CDNA3 (MI300): wavefront 64, MFMA, 64 KiB of LDS per block
ARCHS = ("gfx90a", "gfx940", "gfx941", "gfx942")
_ARCH = re.compile(r"^gfx9[0-9a-f]{2}$")
WAVE_SIZE = 64
LDS_BYTES = 64 * 1024


def normalize_arch(arch) -> str:
    """'gfx90a', 'GFX940', 'gfx90a:sramecc+:xnack-' -> the processor name."""
    a = str(arch).strip().lower().split(":", 1)[0]
    if not _ARCH.match(a) or a not in ARCHS:
        raise ValueError(f"unknown or unsupported HIP arch {arch!r}; the HIP backend builds for "
                         f"{', '.join(ARCHS)} (CDNA2/CDNA3)")
    return a


def parse_target(kind, arch=None, options=None) -> Target:
    if kind not in ("hip", "rocm"):
        raise ValueError(f"the HIP backend cannot build for target kind {kind!r}")
    opts = dict(options or {})
    if arch is None:
        arch = opts.pop("arch", None) or opts.pop("mcpu", None)
    return Target("hip", normalize_arch(arch or DEFAULT_ARCH), opts)
