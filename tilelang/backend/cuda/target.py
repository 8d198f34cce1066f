"""CUDA targets: "cuda", "cuda -arch=sm_80", {"kind": "cuda", "arch": "sm_90a"}.
With no arch, the visible GPU's (sm_90 becomes sm_90a so that Hopper-only
instructions are available); with no GPU, sm_90a (the project's first target)."""
from __future__ import annotations

import re

from tilelang.backend.registry import Target

DEFAULT_ARCH = "sm_90a"
_ARCH = re.compile(r"^sm_(\d+)([af]?)$")


def normalize_arch(arch) -> str:
    """'sm_80', '80', 'sm_90a', 90 -> 'sm_XX[a]'."""
    a = str(arch).strip().lower()
    if a.isdigit():
        a = "sm_" + a
    if a.startswith("compute_"):
        a = "sm_" + a[len("compute_"):]
    if not _ARCH.match(a):
        raise ValueError(f"unknown CUDA arch {arch!r}; expected e.g. 'sm_80' or 'sm_90a'")
    return a


def arch_number(arch: str) -> int:
    """'sm_90a' -> 90."""
    return int(_ARCH.match(arch).group(1))


RESERVED_SMEM = 1024   # shared memory the hardware reserves per block (sm_80+)


def sm_limits(arch) -> tuple:
    """(threads, blocks, shared bytes) one SM of `arch` holds."""
    n = arch_number(arch)
    if n >= 90:
        return 2048, 32, 228 * 1024
    if n in (80, 87):
        return 2048, 32, 164 * 1024
    if n >= 86:
        return 1536, 16 if n == 86 else 24, 100 * 1024
    return 1024, 16, 64 * 1024


def full_occupancy_blocks(nthreads, smem_bytes, arch) -> int:
    """The blocks of `nthreads` threads and `smem_bytes` of dynamic shared memory that one
    SM of `arch` can hold at once (registers aside)."""
    threads, blocks, smem = sm_limits(arch)
    n = min(threads // max(nthreads, 1), blocks)
    if smem_bytes:
        n = min(n, smem // (smem_bytes + RESERVED_SMEM))
    return n


def smem_carveout_bytes(arch, smem_bytes_per_sm) -> int:
    """The shared-memory carveout (the part of the SM's unified L1 / shared storage given to
    shared memory) the driver must choose for `smem_bytes_per_sm` of resident blocks' shared
    memory on `arch`: the smallest of the configurable steps that holds it. The rest of the
    256 KB (sm_90) stays L1, which holds the lines of global loads in flight."""
    n = arch_number(arch)
    steps_kb = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228) if n >= 90 else \
        (0, 8, 16, 32, 64, 100, 132, 164) if n in (80, 87) else (0, 8, 16, 32, 64, 100)
    for kb in steps_kb:
        if smem_bytes_per_sm <= kb * 1024:
            return kb * 1024
    return steps_kb[-1] * 1024


def typical_sm_count(arch) -> int:
    """The SMs of the usual part of `arch` (H100 SXM / H200: 132; A100: 108): planning
    heuristics that depend on the grid's waves use it (the cubin must not depend on the
    device the compile runs on)."""
    n = arch_number(arch)
    return 132 if n >= 90 else 108 if n in (80, 87) else 84 if n == 86 else 128 if n == 89 else 80


def _driver():
    from cuda.bindings import driver
    return driver


def device_count() -> int:
    """Number of visible CUDA devices; 0 when the driver or the bindings are absent."""
    try:
        drv = _driver()
        err, = drv.cuInit(0)
        if err != drv.CUresult.CUDA_SUCCESS:
            return 0
        err, n = drv.cuDeviceGetCount()
        return n if err == drv.CUresult.CUDA_SUCCESS else 0
    except Exception:  # noqa: BLE001 - no bindings, no libcuda: no GPU
        return 0


def detect_arch(device: int = 0):
    """The arch of a visible GPU, or None."""
    if device_count() == 0:
        return None
    drv = _driver()
    err, dev = drv.cuDeviceGet(device)
    attr = drv.CUdevice_attribute
    _, major = drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    _, minor = drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    cc = major * 10 + minor
    # the arch-specific 'a' variants unlock wgmma/setmaxnreg (sm_90a) and friends
    return f"sm_{cc}a" if cc in (90, 100, 103, 120) else f"sm_{cc}"


_noticed = False


def _notice_no_gpu():
    global _noticed
    if not _noticed:
        _noticed = True
        import logging
        logging.getLogger("tilelang").warning(
            "tilelang: no CUDA GPU is visible; target 'cuda' compiles for %s (the kernel can be inspected, "
            "not run; name the arch, e.g. 'cuda -arch=sm_80', to choose another)", DEFAULT_ARCH)


def parse_target(kind, arch, options) -> Target:
    if kind != "cuda":
        raise ValueError(f"the CUDA backend cannot build for target kind {kind!r}")
    opts = dict(options or {})
    if arch is None and "arch" in opts:
        arch = opts.pop("arch")
    if arch is None:
        arch = detect_arch()
        if arch is None:
            _notice_no_gpu()
            arch = DEFAULT_ARCH
    arch = normalize_arch(arch)
    return Target("cuda", arch, opts)
