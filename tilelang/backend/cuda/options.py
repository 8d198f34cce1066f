"""The CUDA backend's code-generation options, typed and read once per compile from the
pass configs and the `TILELANG_CUDA_*` environment switches (listed in tilelang/env.py;
they are part of the kernel cache key). Planning and code generation read `plan.options`
and never the environment."""
from __future__ import annotations

import os
from dataclasses import dataclass, fields


def _flag(env, name, default):
    v = env.get(name)
    if v is None or v == "":
        return default
    return v.strip().lower() in ("1", "true", "yes", "on")


def _count(env, name):
    """A non-negative int switch (0 when unset)."""
    v = (env.get(name) or "").strip()
    if not v:
        return 0
    if not v.isdigit():
        raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    return int(v)


def _arch_at_least(arch, n):
    import re
    m = re.match(r"sm_(\d+)", str(arch))
    return m is not None and int(m.group(1)) >= n


@dataclass(frozen=True)
class CudaOptions:
    tma: bool = True               # bulk tensor copies in sm_90a GEMM loops (TILELANG_CUDA_TMA, tl.disable_tma_lower)
    tma_copy: bool = False         # T.tma_copy as bulk copies (TILELANG_CUDA_TMA_COPY)
    bulk_tiles: bool = True        # whole-tile copies and tile reductions as bulk copies on sm_90+ (as `tma`)
    tma_refill_wait: bool = False  # thread 0 waits for every warp before refilling a ring slot (..._TMA_REFILL=wait)
    tma_ring: bool = True          # register-only pipelined bodies load through the TMA ring (..._TMA_RING)
    tma_l2_prefetch: int = 0       # the TMA ring also prefetches iteration k + n into L2 (..._TMA_L2_PREFETCH=n)
    pingpong: bool = False         # attention warpgroups take turns at the first gemm (..._PINGPONG)
    tma_multicast: bool = False    # pairs of blocks share GEMM tiles (..._TMA_MULTICAST)
    overlap_gemm: bool = False     # attention defers the P V wgmma into the next iteration (..._OVERLAP_GEMM)
    wgmma_rs: bool = True          # wgmma reads A from registers when it is a fragment (..._WGMMA_RS)
    dump_fragments: bool = False   # print the fragment layouts the planner chose (..._DUMP_FRAGMENTS)

    @classmethod
    def from_config(cls, config=None, arch=None, env=None) -> "CudaOptions":
        env = os.environ if env is None else env
        config = config or {}
        tma = _flag(env, "TILELANG_CUDA_TMA", True) and not bool(config.get("tl.disable_tma_lower", False))
        return cls(
            tma=tma and arch is not None and str(arch).startswith("sm_90a"),
            bulk_tiles=tma and arch is not None and _arch_at_least(arch, 90),
            tma_copy=_flag(env, "TILELANG_CUDA_TMA_COPY", False),
            tma_refill_wait=env.get("TILELANG_CUDA_TMA_REFILL", "") == "wait",
            tma_ring=_flag(env, "TILELANG_CUDA_TMA_RING", True),
            tma_l2_prefetch=_count(env, "TILELANG_CUDA_TMA_L2_PREFETCH"),
            pingpong=_flag(env, "TILELANG_CUDA_PINGPONG", False),
            tma_multicast=_flag(env, "TILELANG_CUDA_TMA_MULTICAST", False),
            overlap_gemm=_flag(env, "TILELANG_CUDA_OVERLAP_GEMM", False),
            wgmma_rs=_flag(env, "TILELANG_CUDA_WGMMA_RS", True),
            dump_fragments=_flag(env, "TILELANG_CUDA_DUMP_FRAGMENTS", False),
        )

    def describe(self) -> str:
        """The options that differ from the defaults, e.g. `tma=False, pingpong=True`."""
        default = CudaOptions()
        diff = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)]
        return ", ".join(diff) or "defaults"
