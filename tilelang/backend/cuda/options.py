"""The CUDA backend's options, typed and read once per compile from the pass configs and
the environment switches (listed in tilelang/env.py). `CudaBackend.generate` builds one
`CudaOptions` and hands it to the passes (`ctx.config[OPTIONS]`), the planner and code
generation (`plan.options`, `cg.options`) and NVRTC; nothing else in this folder reads the
environment or a pass config. The kernel cache key (`CudaBackend.identity`) is the switches
that change the generated code or the cubin, read off the same table."""
from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, fields

OPTIONS = "_cuda_options"   # the PassContext config entry that carries this compile's CudaOptions


def _flag(v, default):
    if v is None or v == "":
        return default
    return v.strip().lower() in ("1", "true", "yes", "on")


def _path(v, default):
    return v or default


def _trace(v, default):
    """TL_LOWER_TRACE: a mode (terminal / html / both / 1) or a directory; off values -> None."""
    from tilelang.transform.lower_trace import parse_setting
    return v.strip() if parse_setting(v) is not None else default


def _count(v, default):
    """A non-negative int switch."""
    v = (v or "").strip()
    if not v:
        return default
    if not v.isdigit():
        raise ValueError(f"must be a non-negative integer, got {v!r}")
    return int(v)


def _fast_compile_level(v, default):
    """NVRTC's --Ofast-compile level: min, mid or max (empty, 0 or off: not given)."""
    v = (v or "").strip().lower()
    if v in ("", "0", "off"):
        return default
    if v not in ("min", "mid", "max"):
        raise ValueError(f"must be min, mid, max or 0, got {v!r}")
    return v


def _ptxas_opt_level(v, default):
    """ptxas's -O level, 0..3 (empty: not given, ptxas's own -O3)."""
    v = (v or "").strip()
    if not v:
        return default
    if v not in ("0", "1", "2", "3"):
        raise ValueError(f"must be 0, 1, 2 or 3, got {v!r}")
    return int(v)


# environment switch -> (parse(value, default), default, the CudaOptions field it sets,
# whether it changes the generated code or the cubin: then it is part of the cache key)
_SWITCHES = {
    "TILELANG_CUDA_TMA": (_flag, True, "tma", True),
    "TILELANG_CUDA_TMA_COPY": (_flag, False, "tma_copy", True),
    "TILELANG_CUDA_TMA_REFILL": (lambda v, d: v == "wait" if v else d, False, "tma_refill_wait", True),
    "TILELANG_CUDA_TMA_RING": (_flag, True, "tma_ring", True),
    "TILELANG_CUDA_CP_ASYNC_REFILL": (lambda v, d: v == "wait" if v else d, False, "cp_async_refill_wait", True),
    "TILELANG_CUDA_TMA_L2_PREFETCH": (_count, 0, "tma_l2_prefetch", True),
    "TILELANG_CUDA_TMA_SLAB_BOX": (_flag, True, "tma_slab_box", True),
    "TILELANG_CUDA_TMA_BULK_RUNS": (_flag, True, "tma_bulk_runs", True),
    "TILELANG_CUDA_RING_TOP_FENCE": (_flag, False, "ring_top_fence", True),
    "TILELANG_CUDA_WS_EARLY_RELEASE": (_flag, True, "ws_early_release", True),
    "TILELANG_CUDA_ONE_STAGE_PREFETCH": (_flag, True, "one_stage_prefetch", True),
    "TILELANG_CUDA_CP_ASYNC_MBARRIER": (_flag, True, "cp_async_mbarrier", True),
    "TILELANG_CUDA_PINGPONG": (_flag, False, "pingpong", True),
    "TILELANG_CUDA_TMA_MULTICAST": (_flag, False, "tma_multicast", True),
    "TILELANG_CUDA_OVERLAP_GEMM": (_flag, False, "overlap_gemm", True),
    "TILELANG_CUDA_WGMMA_WAIT_PIN": (_flag, True, "wgmma_wait_pin", True),
    "TILELANG_CUDA_OVERLAP_RING": (_flag, True, "overlap_ring", True),
    "TILELANG_CUDA_OVERLAP_DEFER": (_flag, True, "overlap_defer", True),
    "TILELANG_CUDA_WGMMA_RS": (_flag, True, "wgmma_rs", True),
    "TILELANG_CUDA_MMA_SWIZZLED": (_flag, True, "mma_swizzled", True),
    "TILELANG_CUDA_MMA_RS": (_flag, True, "mma_rs", True),
    "TILELANG_CUDA_SMEM_SHARING_OCCUPANCY": (_flag, True, "smem_sharing_occupancy", True),
    "TILELANG_CUDA_SMEM_SHARING_L1": (_flag, True, "smem_sharing_l1", True),
    "TILELANG_CUDA_SMEM_SHARE_ALWAYS": (_flag, False, "smem_share_always", True),
    "TILELANG_CUDA_WGMMA_IN_FLIGHT": (_flag, True, "wgmma_in_flight", True),
    "TILELANG_CUDA_WARP_SPECIALIZE": (_flag, True, "warp_specialize", True),
    "TILELANG_CUDA_GUARDED_SPLIT": (_flag, True, "guarded_split", True),
    "TILELANG_CUDA_STREAMING_OCCUPANCY": (_flag, False, "streaming_occupancy", True),
    "TILELANG_CUDA_REGISTER_PREFETCH": (_flag, False, "register_prefetch", True),
    "TILELANG_CUDA_SELECTIVE_PROXY_FENCES": (_flag, True, "selective_proxy_fences", True),
    "TILELANG_CUDA_GEMM_SELECTIVE_FENCES": (_flag, True, "gemm_selective_fences", True),
    "TILELANG_CUDA_PAD_ATOMIC_STAGING": (_flag, True, "pad_atomic_staging", True),
    "TILELANG_CUDA_FENCE_FIRST_ITERATION": (_flag, True, "fence_first_iteration", True),
    "TILELANG_CUDA_WS_ATTENTION": (_flag, None, "ws_attention", True),
    "TILELANG_CUDA_COVERED_BARRIERS": (_flag, True, "covered_barriers", True),
    "TILELANG_CUDA_ITERATION_DISJOINT": (_flag, False, "iteration_disjoint", True),
    "TILELANG_CUDA_UNFENCED_MBARRIER_CP_ASYNC": (_flag, False, "unfenced_mbarrier_cp_async", True),
    "TILELANG_CUDA_WGMMA_UNIFORM_WG": (_flag, False, "wgmma_uniform_wg", True),
    "TILELANG_CUDA_DUMP_FRAGMENTS": (_flag, False, "dump_fragments", True),   # prints while planning
    "TILELANG_CUDA_MIN_BLOCKS": (_count, 1, "min_blocks_per_sm", True),
    "TILELANG_CUDA_CONVERTING_COPY_PIPELINE": (_flag, True, "converting_copy_pipeline", True),
    "TILELANG_CUDA_EPILOGUE_TMA_STORE": (_flag, True, "epilogue_tma_store", True),
    "TILELANG_CUDA_WS_MULTICAST": (_flag, True, "ws_multicast", True),
    "TILELANG_CUDA_CP_ASYNC_UNROLL": (_flag, True, "cp_async_unroll", True),
    "TILELANG_CUDA_CP_ASYNC_EARLY_REFILL": (_flag, False, "cp_async_early_refill", True),
    "TILELANG_CUDA_MMA_CHAINS": (_flag, True, "mma_chains", True),
    "TILELANG_CUDA_PIPELINED_OCCUPANCY": (_flag, False, "pipelined_occupancy", True),
    "TILELANG_CUDA_OCCUPANCY_SEARCH": (_flag, True, "occupancy_search", True),

    "TILELANG_CUDA_CP_ASYNC_REFILL_AT_BARRIER": (_flag, True, "cp_async_refill_at_barrier", True),
    "TILELANG_CUDA_CP_ASYNC_PRELOAD": (_flag, True, "cp_async_preload", True),
    "TILELANG_CUDA_EARLY_RING_PROLOGUE": (_flag, True, "early_ring_prologue", True),
    "TILELANG_CUDA_PRIVATE_BARRIERS": (_flag, False, "private_barriers", True),
    "TILELANG_CUDA_CP_ASYNC_REFILL_UNDER_WGMMA": (_flag, True, "cp_async_refill_under_wgmma", True),
    "TILELANG_CUDA_TMA_STORE_SHARED_WAIT": (_flag, True, "tma_store_shared_wait", True),
    "TILELANG_CUDA_NVRTC_PCH": (_flag, True, "nvrtc_pch", False),   # the cubin is the same either way
    "TILELANG_CUDA_NVRTC_SPLIT_COMPILE": (_count, 0, "nvrtc_split_compile", True),
    "TILELANG_CUDA_NVRTC_FAST_COMPILE": (_fast_compile_level, None, "nvrtc_fast_compile", True),
    "TILELANG_CUDA_PTXAS_OPT_LEVEL": (_ptxas_opt_level, None, "ptxas_opt_level", True),
    "TILELANG_CUDA_NVRTC_TIME": (_flag, False, "nvrtc_time", False),   # only measures: the cubin is the same
    "TILELANG_CUDA_C_LAUNCH": (_flag, True, "c_launch", False),   # how a launch is called, not the kernel
    "TL_CUDA_LINEINFO": (_flag, False, "lineinfo", True),
    "TL_CUDA_DUMP": (_path, None, "dump_dir", False),
    "TL_LOWER_TRACE": (_trace, None, "lower_trace", False),
}
_warned: set = set()


def read_switches(env=None) -> dict:
    """{switch: parsed value} for every switch in the table; a `TILELANG_CUDA_*` variable
    the table does not know is warned about once (a misspelt switch does nothing)."""
    env = os.environ if env is None else env
    for k in env:
        if k.startswith("TILELANG_CUDA_") and k not in _SWITCHES and k not in _warned:
            _warned.add(k)
            warnings.warn(f"environment variable {k} is not a CUDA backend switch (ignored); "
                          f"known: {', '.join(s for s in _SWITCHES if s.startswith('TILELANG_CUDA_'))}",
                          stacklevel=3)
    out = {}
    for k, (parse, default, _, _) in _SWITCHES.items():
        try:
            out[k] = parse(env.get(k), default)
        except ValueError as e:
            raise ValueError(f"environment variable {k}: {e}") from None
    return out


def _arch_at_least(arch, n):
    m = re.match(r"sm_(\d+)", str(arch))
    return m is not None and int(m.group(1)) >= n


@dataclass(frozen=True)
class CudaOptions:
    tma: bool = True               # bulk tensor copies in sm_90a GEMM loops (TILELANG_CUDA_TMA, tl.disable_tma_lower)
    tma_copy: bool = False         # T.tma_copy as bulk copies (TILELANG_CUDA_TMA_COPY)
    bulk_tiles: bool = True        # whole-tile copies and tile reductions as bulk copies on sm_90+ (as `tma`)
    tma_atomics: bool = True       # T.atomic_*(use_tma=True) as bulk reductions (not tl.disable_tma_lower)
    tma_refill_wait: bool = False  # thread 0 waits for every warp before refilling a ring slot (..._TMA_REFILL=wait)
    tma_ring: bool = True          # register-only pipelined bodies load through the TMA ring (..._TMA_RING)
    cp_async_refill_wait: bool = False  # a cp.async ring slot is refilled after the wait for the next one (..._CP_ASYNC_REFILL=wait)
    tma_l2_prefetch: int = 0       # the TMA ring also prefetches iteration k + n into L2 (..._TMA_L2_PREFETCH=n)
    tma_slab_box: bool = True      # a slab_row-ordered A tile loads by one 4-/5-D box per strip (..._TMA_SLAB_BOX)
    ring_top_fence: bool = False   # the TMA ring's barrier at the top of an iteration fences even where the
                                   # body's own fenced barrier follows its last shared write
                                   # (plan/proxy_fences.py writes_fenced_within; ..._RING_TOP_FENCE=1)
    tma_bulk_runs: bool = True     # a pipelined row-major tile filled by one contiguous run of its tensor
                                   # joins the TMA ring as a plain bulk copy where the body's gemms run on
                                   # wgmma (ops/tma.py _bulk_run, plan/copy_forms.py; ..._TMA_BULK_RUNS)
    ws_early_release: bool = True  # warp-specialized consumers release the previous slot before waiting
                                   # for a slot still in flight (..._WS_EARLY_RELEASE)
    one_stage_prefetch: bool = True  # num_stages=1: each copy group reissued after its last reader (..._ONE_STAGE_PREFETCH)
    cp_async_mbarrier: bool = True   # a non-bulk T.tma_copy: cp.async arriving on its mbarrier (..._CP_ASYNC_MBARRIER)
    pingpong: bool = False         # attention warpgroups take turns at the first gemm (..._PINGPONG)
    tma_multicast: bool = False    # pairs of blocks share GEMM tiles (..._TMA_MULTICAST)
    overlap_gemm: bool = False     # attention defers the P V wgmma into the next iteration (..._OVERLAP_GEMM)
    overlap_ring: bool = True      # ... with K and V on two TMA rings, not cp.async (plan/overlap.py; ..._OVERLAP_RING)
    overlap_defer: bool = True     # ... and O's rescale runs beside the next Q K^T (plan/overlap.py; ..._OVERLAP_DEFER)
    wgmma_wait_pin: bool = True    # ... and pins its softmax ahead of the wait for it (plan/overlap.py; ..._WGMMA_WAIT_PIN)
    wgmma_rs: bool = True          # wgmma / TF32 mma.sync read A from registers when it is a fragment (..._WGMMA_RS)
    smem_sharing_occupancy: bool = True   # buffers with disjoint lifetimes share storage where that adds blocks an SM
    smem_sharing_l1: bool = True   # ... or, in straight-line kernels without gemms, leaves more L1 at the same blocks
    smem_share_always: bool = False   # a test mode: buffers share storage wherever their lifetimes allow
    mma_rs: bool = True            # a 16-bit mma.sync reads an A fragment in the accumulator pattern from registers
    mma_swizzled: bool = True      # mma.sync reads tiles in a wgmma gemm's swizzle, so that gemm keeps wgmma
                                   # (plan/kernel.py _mma_reads_swizzled; ..._MMA_SWIZZLED=0: both on mma.sync)
    wgmma_in_flight: bool = True   # a wgmma group is waited for before the first statement that needs it
                                   # (plan/wgmma_waits.py; ..._WGMMA_IN_FLIGHT=0: right after the gemm)
    warp_specialize: bool = True   # a producer warpgroup feeds TMA-ring GEMM loops on sm_90 (plan/warp_specialize.py;
                                   # ..._WARP_SPECIALIZE, pass config tl.disable_warp_specialized)
    guarded_split: bool = True     # a cooperative nest the threads do not divide runs as an unrolled loop with a
                                   # bound check, not a strided loop (plan/thread_splits.py; ..._GUARDED_SPLIT)
    streaming_occupancy: bool = False  # memory-bound kernels ask ptxas for a full SM of blocks, dropped where
                                   # it spills (plan/occupancy.py; ..._STREAMING_OCCUPANCY=1)
    register_prefetch: bool = False  # a serial loop that starts by loading global tiles into fragments loads
                                   # the next iteration's tiles before the current one's work (plan/register_prefetch.py;
                                   # ..._REGISTER_PREFETCH)
    selective_proxy_fences: bool = True  # barriers that order no tile a TMA store reads skip the async-proxy
                                   # fence (plan/proxy_fences.py selective_fences; ..._SELECTIVE_PROXY_FENCES)
    gemm_selective_fences: bool = True  # ... also in kernels with gemms (wgmma operands are async-proxy tiles)
                                   # and in loop bodies (plan/proxy_fences.py; ..._GEMM_SELECTIVE_FENCES)
    fence_first_iteration: bool = True  # ... a loop body's first barrier fences only in the first iteration where
                                   # only what ran before the loop needs it (..._FENCE_FIRST_ITERATION)
    pad_atomic_staging: bool = True  # 32-bit shared tiles staging an accumulator for global atomics get
                                   # 16-byte row padding (plan/kernel.py _atomic_staging_tiles; ..._PAD_ATOMIC_STAGING)
    ws_attention: bool | None = None  # ... also attention-style loops: None where their ring issues many boxes
                                   # (plan/attention_warp_specialize.py; ..._WS_ATTENTION=1 always, =0 never)
    # opt-in: both correct, both slower on the one suite kernel they change (the pipelined sparse MLA
    # forward's producer: 0.0360 ms with neither, 0.0386 / 0.0404 with one, 0.0395 with both; H200)
    unfenced_mbarrier_cp_async: bool = False  # cp.async landing on an mbarrier is no write the issuing thread's
                                   # barriers fence (plan/proxy_fences.py; ..._UNFENCED_MBARRIER_CP_ASYNC=1)
    iteration_disjoint: bool = False  # a serial loop whose iterations touch a shared buffer at different elements
                                   # carries nothing through it (analysis/iteration_disjoint.py; ..._ITERATION_DISJOINT=1)
    covered_barriers: bool = True  # a cross-warp register reduction's barrier orders shared memory for the
                                   # barrier planner, and a warp-specialized ring loop whose body's barriers
                                   # order every carried access gets none at its top (plan/sync.py; ..._COVERED_BARRIERS)
    wgmma_uniform_wg: bool = False # shared-operand wgmma: the warpgroup index broadcast from lane 0, so that
                                   # ptxas keeps the descriptors in uniform registers (include/tl_cuda/wgmma.h;
                                   # ..._WGMMA_UNIFORM_WG=0: tid >> 7, 64-bit vector adds and R2UR per wgmma)
    dump_fragments: bool = False   # print the fragment layouts the planner chose (..._DUMP_FRAGMENTS)
    min_blocks_per_sm: int = 1     # __launch_bounds__'s second argument where the kernel sets none
                                   # (T.annotate_min_blocks_per_sm): 1 as the published package prints;
                                   # ..._MIN_BLOCKS=0 leaves it out (ptxas then caps registers for occupancy)
    converting_copy_pipeline: bool = True  # a T.Pipelined loop issues a converting global -> shared copy
                                   # of a later iteration into its ring slot (..._CONVERTING_COPY_PIPELINE)
    epilogue_tma_store: bool = True   # a GEMM's fragment -> global store after its pipelined loop is staged
                                   # through shared memory (over the ring) and one TMA store
                                   # (plan/stage_epilogue.py; ..._EPILOGUE_TMA_STORE=0: per thread)
    ws_multicast: bool = True      # a warp-specialized GEMM's blocks run in pairs that multicast the tiles
                                   # both read (plan/warp_specialized_ring.py; ..._WS_MULTICAST=0: single blocks)
    pipelined_occupancy: bool = False  # ... also kernels whose pipelined loops only copy (no gemm): mHC pre's
                                   # fused rest (plan/occupancy.py; ..._PIPELINED_OCCUPANCY=1)
    occupancy_search: bool = True  # where such a cap makes ptxas spill, the most blocks that do not (a binary
                                   # search from half the cap, a compile a step), not no cap (..._OCCUPANCY_SEARCH)
    mma_chains: bool = True        # a TF32 mma.sync gemm with few MMAs a warp per k8 step alternates its steps
                                   # between accumulator chains (ops/mma.py tf32_chains; ..._MMA_CHAINS)
    cp_async_unroll: bool = True   # a cp.async copy nest of up to 16 vectors a thread is one unrolled run of
                                   # copies, not a strided loop (ops/vector_copy.py thread_split; ..._CP_ASYNC_UNROLL)
    cp_async_early_refill: bool = False # a cp.async ring slot the body stops using early is refilled right
                                   # there, not after the body (plan/cp_async_pipeline.py early_refill;
                                   # ..._CP_ASYNC_EARLY_REFILL)
    cp_async_refill_at_barrier: bool = True  # a cp.async ring slot the body stops using before a block
                                   # barrier of its own is refilled after that barrier, which then also
                                   # orders the refill: one barrier an iteration less (plan/cp_async_pipeline.py
                                   # refill_barrier; ..._CP_ASYNC_REFILL_AT_BARRIER)
    cp_async_refill_under_wgmma: bool = True  # ... and issued while the wgmma gemm right after that barrier
                                   # runs, its wait moved after the refill (plan/cp_async_pipeline.py
                                   # _issue_only; ..._CP_ASYNC_REFILL_UNDER_WGMMA)
    cp_async_preload: bool = True  # a tile loaded right before a cp.async pipeline (only its body reads it)
                                   # is issued as cp.async in the prologue's first group, not loaded and
                                   # stored before it (plan/cp_async_preload.py; ..._CP_ASYNC_PRELOAD)
    early_ring_prologue: bool = True  # a TMA ring's prologue issued before the tile loads right before its
                                   # loop (plan/early_ring_prologue.py; ..._EARLY_RING_PROLOGUE)
    private_barriers: bool = False  # inserted barriers between nests that hand every element to one thread
                                   # dropped (plan/private_barriers.py; ..._PRIVATE_BARRIERS)
    tma_store_shared_wait: bool = True  # consecutive bulk stores of tiles wait once, after the last, for
                                   # their tiles to be read (plan/copy_forms.py share_store_waits;
                                   # ..._TMA_STORE_SHARED_WAIT)
    register_usage_level: int | None = None  # ptxas --register-usage-level (pass config
                                   # tl.ptxas_register_usage_level, 0..10)
    nvrtc_pch: bool = True         # NVRTC parses the headers once a process (automatic precompiled header):
                                   # ~0.1 s less CPU a compile after the first (host/nvrtc.py; ..._NVRTC_PCH)
    nvrtc_split_compile: int = 0   # NVRTC --split-compile=n: its optimizer on n threads (0: off; to measure
                                   # on a many-core host; ..._NVRTC_SPLIT_COMPILE=n)
    nvrtc_fast_compile: str | None = None  # NVRTC --Ofast-compile=<level>: less optimization for a faster
                                   # compile (mid: about half the time, but it leaves loops rolled: the
                                   # FlashAttention / MLA accumulators then live in local memory, 600-800
                                   # bytes of stack; min already spills in MLA decode; off by default;
                                   # ..._NVRTC_FAST_COMPILE=min|mid|max)
    ptxas_opt_level: int | None = None  # ptxas -O<n> inside NVRTC (None: ptxas's -O3; -O2 gives the same
                                   # SASS on the reference kernels, -O1 ~25% less ptxas time on MLA decode
                                   # and other SASS: to measure; ..._PTXAS_OPT_LEVEL=0..3)
    nvrtc_time: bool = False       # NVRTC's own split of each compile (front end, NVVM optimizer, ptxas;
                                   # --time) in Compiled.phases (benchmarks/cold_compile.py; ..._NVRTC_TIME=1)
    c_launch: bool = True          # the launch as one call into a small C extension built once with the system
                                   # compiler (host/c_launch.py; ..._C_LAUNCH=0: ctypes' cuLaunchKernel call)
    lineinfo: bool = False         # NVRTC -lineinfo: source lines in the cubin for profilers (TL_CUDA_LINEINFO=1)
    dump_dir: str | None = None    # keep every generated .cu here, and the source of a failed compile (TL_CUDA_DUMP)
    lower_trace: str | None = None  # the lower-trace switch: a mode or a directory (tl.lower_trace, TL_LOWER_TRACE)
    fast_math: bool = True         # NVRTC --use_fast_math (pass config tl.disable_fast_math turns it off)
    compile_flags: tuple = ()      # the user's nvcc flags that mean something to NVRTC (nvrtc_flags)

    @classmethod
    def from_config(cls, config=None, arch=None, env=None) -> "CudaOptions":
        """The options of one compile for `arch` from its pass configs and the environment."""
        config = config or {}
        sw = read_switches(env)
        values = {field: sw[name] for name, (_, _, field, _) in _SWITCHES.items()}
        tma = values["tma"] and not bool(config.get("tl.disable_tma_lower", False))
        values.update(
            tma=tma and arch is not None and str(arch).startswith("sm_90a"),
            bulk_tiles=tma and arch is not None and _arch_at_least(arch, 90),
            tma_atomics=not bool(config.get("tl.disable_tma_lower", False)),
            lower_trace=_trace(config.get("tl.lower_trace"), None) or values["lower_trace"],
            fast_math=not bool(config.get("tl.disable_fast_math", False)),
            warp_specialize=values["warp_specialize"] and not bool(config.get("tl.disable_warp_specialized", False)),
            compile_flags=nvrtc_flags(config.get("compile_flags") or ()),
            register_usage_level=register_usage_level(config.get("tl.ptxas_register_usage_level")),
        )
        return cls(**values)

    def describe(self) -> str:
        """The options that differ from the defaults, e.g. `tma=False, pingpong=True`."""
        default = CudaOptions()
        diff = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)]
        return ", ".join(diff) or "defaults"


def switches_identity(env=None) -> str:
    """The environment switches that change the generated code or the cubin, where they
    differ from their defaults (part of the kernel cache key; the pass configs and the
    target are in the key already)."""
    sw = read_switches(env)
    return ",".join(f"{name}={sw[name]}" for name, (_, default, _, keyed) in _SWITCHES.items()
                    if keyed and sw[name] != default)


def register_usage_level(v):
    """The pass config tl.ptxas_register_usage_level as ptxas takes it (an int 0..10), or None."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, str)) or not str(v).strip().isdigit() or \
            not 0 <= int(v) <= 10:
        raise ValueError(f"pass config tl.ptxas_register_usage_level must be an int from 0 to 10, got {v!r}")
    return int(v)


def ptxas_options(options) -> tuple:
    """The NVRTC options the compile's CudaOptions add for ptxas."""
    out = ()
    if options.register_usage_level is not None:
        out += (f"--ptxas-options=--register-usage-level={options.register_usage_level}",)
    if options.ptxas_opt_level is not None:
        out += (f"--ptxas-options=-O{options.ptxas_opt_level}",)
    return out


# nvcc flags without a meaning for NVRTC's device-only compile: NVRTC always optimizes, the
# target picks the architecture, host-compiler and host-warning flags have no host to reach
_DROPPED = ("-O", "-W", "--expt-", "-fPIC", "--keep", "-arch", "--gpu-architecture", "-gencode", "--generate-code")


def nvrtc_flags(flags) -> tuple:
    """The NVRTC options of a kernel's nvcc `compile_flags` (`T.annotate_compile_flags`,
    `compile_flags=`, pass config `tl.device_compile_flags`): `-D`, `-U`, `-I`, `-lineinfo`,
    `-G`, `--maxrregcount`, `--ftz` / `--prec-*` / `--fmad`, `-Xptxas` and the others NVRTC
    takes pass through (an option it does not know fails the compile, naming it);
    `--ptxas-options=a,b` becomes one option per ptxas flag (NVRTC passes the value as one);
    `-O3`, `-W...`, `--expt-*`, `-Xcompiler X`, `-fPIC`, `--keep` and the architecture
    flags are dropped."""
    if isinstance(flags, str):
        flags = flags.split()
    out, it = [], iter(flags)
    for f in it:
        if f == "-Xcompiler":
            next(it, None)   # its argument is the host compiler's
        elif f.startswith(("-Xcompiler=", "--compiler-options")):
            continue
        elif f.startswith(_DROPPED):
            continue
        elif f.startswith("--ptxas-options="):
            out += [f"--ptxas-options={p}" for p in f.split("=", 1)[1].split(",") if p]
        else:
            out.append(f)
    return tuple(out)
