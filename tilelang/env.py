"""Environment variables the package reads, in one place.

TILELANG_DEFAULT_TARGET  target used when none is given ("auto": GPU if present, else CPU)
TILELANG_CACHE_DIR       kernel cache directory (default ~/.cache/tilelang)
TILELANG_DISABLE_CACHE   1 disables the kernel cache
TL_LOWER_TRACE           the IR after every pass, down to the backend's source (CUDA: its plan, the
                         source, PTX, SASS; CPU: the C++); a cache hit compiles again to trace:
                         1 / on / html: an HTML page per compiled kernel under TL_LOWER_TRACE_DIR
                         terminal: a coloured diff per pass that changed something; both: the two
                         0 / off: none; any other value: a directory that gets one file per page
                         (pass config tl.lower_trace takes the same values)
TL_LOWER_TRACE_DIR       where the HTML pages go: <dir>/<script>/<kernel>.html (default ./tmp/lower_trace_dir)
TILELANG_PASS_PROFILE    1 prints a per-pass timing table (also on a cache hit: the stored timings)
TILELANG_PASS_PROFILE_THRESHOLD_MS  hide passes faster than this (pass config tl.pass_profile_threshold_ms)
TILELANG_REMOTE_CACHE    redis://host:port: share compiled kernels and tuning results between hosts
                         (_TIMEOUT connect timeout in s, _SECRET signs entries, _TTL entry lifetime in s)
TILELANG_CPU_PCH=0       the CPU backend compiles without its precompiled header of tl_cpu.h
TILELANG_PCH_DIR         where that header is kept (default <tmp>/tilelang-pch-<uid>; content-keyed)
TILELANG_AUTO_TUNING_DISABLE_CACHE  1: always re-tune (no best-config cache)
TILELANG_AUTO_TUNING_PROGRESS       0: no progress bar
TILELANG_AUTO_TUNING_CPU_COUNTS, _CPU_UTILITIES, _MAX_CPU_COUNT: compile-worker count for tuning

CUDA backend switches (read once per compile into backend/cuda/options.py CudaOptions; those
that change the generated code or the cubin are part of the kernel cache key; a
TILELANG_CUDA_* name that is not one of them is warned about):
TILELANG_CUDA_TMA=0            no bulk tensor copies (TMA) in sm_90a GEMM loops (cp.async instead)
TILELANG_CUDA_TMA_COPY=1       T.tma_copy as bulk copies (default: the running threads copy)
TILELANG_CUDA_TMA_REFILL=wait  thread 0 waits for every warp's release before refilling a TMA ring slot
                               (default: the warp whose release completes the round refills it)
TILELANG_CUDA_CP_ASYNC_REFILL=wait  a cp.async pipeline refills the slot the previous iteration read after
                               waiting for this iteration's copies (default: as soon as every thread is done with it)
TILELANG_CUDA_TMA_RING=0       pipelined loops with register-only bodies (attention) load by cp.async, not TMA
TILELANG_CUDA_TMA_L2_PREFETCH=n  a TMA ring also prefetches the tiles of iteration k + n into L2 (default 0: off)
TILELANG_CUDA_TMA_SLAB_BOX=0   a 128-row wgmma A tile on one warpgroup loads one box per 16-row run (default:
                               one 4-/5-D box per strip)
TILELANG_CUDA_WS_EARLY_RELEASE=0  warp-specialized consumers release a ring slot only after the next one arrived
TILELANG_CUDA_ONE_STAGE_PREFETCH=0  a num_stages=1 loop runs its copies in place (no prefetch of the next iteration)
TILELANG_CUDA_CP_ASYNC_MBARRIER=0  a T.tma_copy that is not a bulk copy runs as the threads' synchronous copy
TILELANG_CUDA_PINGPONG=1       the two warpgroups of an attention loop on the TMA ring take turns at its first gemm
TILELANG_CUDA_TMA_MULTICAST=1  pairs of blocks share GEMM tiles through TMA multicast (slower today)
TILELANG_CUDA_OVERLAP_GEMM=1   attention loops defer the P V wgmma into the next iteration (slower today)
TILELANG_CUDA_OVERLAP_RING=0   an overlapped attention loop (..._OVERLAP_GEMM=1) loads K and V by cp.async with a
                               block barrier per iteration (default: two TMA rings, per-warp releases)
TILELANG_CUDA_OVERLAP_DEFER=0  on the two rings, O's rescale stays at the end of its iteration (default: it runs
                               in the next one, between the issues of Q K^T and P V)
TILELANG_CUDA_WGMMA_WAIT_PIN=0 an overlapped attention loop (..._OVERLAP_GEMM=1) lets ptxas hoist the wait for P V
                               above the softmax (default: a predicated-off store of the row statistics pins it)
TILELANG_CUDA_WGMMA_RS=0       wgmma reads A from shared memory even when it is a register fragment
TILELANG_CUDA_SMEM_SHARING_OCCUPANCY=0  shared buffers share storage only when they do not fit otherwise (default:
                               also where sharing lets more blocks run on an SM)
TILELANG_CUDA_MMA_RS=0         a 16-bit mma.sync gemm reads a register A fragment (the accumulator pattern) through shared
                               memory instead (default: from registers, tl::gemm_rs)
TILELANG_CUDA_MMA_SWIZZLED=0   an mma.sync gemm never reads a tile in wgmma's swizzle: a wgmma gemm sharing
                               a shared tile with it runs on mma.sync too (sparse MLA / attention backward A/B)
TILELANG_CUDA_WGMMA_IN_FLIGHT=0  every wgmma group is waited for right after its gemm (default: before the
                               first statement that needs it; consecutive gemms into one accumulator always
                               share one wait)
TILELANG_CUDA_WARP_SPECIALIZE=0  no producer warpgroup for TMA-ring GEMM loops on sm_90 (as the pass config
                               tl.disable_warp_specialized)
TILELANG_CUDA_GUARDED_SPLIT=0  a copy nest the threads do not divide (128 vectors on 256 threads) runs as a strided
                               loop, not an unrolled loop with a bound check (its loads then wait for the previous nest's)
TILELANG_CUDA_C_LAUNCH=0       a launch calls cuLaunchKernel through ctypes (default: one call into a small C
                               extension that the system C compiler builds once into the cache directory,
                               backend/cuda/host/c_launch.py; without a compiler or Python.h, ctypes anyway)
TILELANG_CUDA_CP_ASYNC_UNROLL=0  a cp.async copy nest of 9..16 vectors a thread (fn of DeepSeek mHC's gemm: 2048
                               16-byte vectors on 128 threads) runs as a strided loop, not one unrolled run (default
                               since 2026-12-03: mHC's gemm 0.0837 -> 0.0791 ms on the H200, FlashAttention bshd
                               unchanged)
TILELANG_CUDA_CP_ASYNC_EARLY_REFILL=1  a cp.async pipeline's ring slot that the body stops using before its end
                               (mHC pre's bf16 tile, copied into registers first) is refilled right there (opt-in:
                               one more block barrier an iteration; mHC pre 1.6% faster, FlashAttention backward slower)
TILELANG_CUDA_PIPELINED_OCCUPANCY=1  as STREAMING_OCCUPANCY, also for kernels whose T.Pipelined loops only copy
                               (no gemm; DeepSeek mHC pre's fused rest: 8 blocks an SM, not 6)
TILELANG_CUDA_OCCUPANCY_SEARCH=0  where the blocks those two ask for make ptxas spill, drop the request (default:
                               the most blocks that do not spill, a binary search from half the request)
TILELANG_CUDA_MMA_CHAINS=0      a TF32 mma.sync gemm runs every k8 step on one accumulator chain (default: a warp with
                               fewer than 4 MMAs a step alternates steps between 2-4 chains, summed after each gemm call:
                               DeepSeek mHC pre's 16 x 16 warp tiles, one warp a scheduler, wait out the MMA latency less)

TILELANG_CUDA_CP_ASYNC_REFILL_AT_BARRIER=0  a cp.async pipeline whose body has a block barrier of its own after
                               its last use of the ring (the FlashAttention backward's dS store before the dQ
                               product) refills the slot after the body behind a barrier of its own, not right
                               after that barrier (on: one block barrier an iteration less; the wgmma groups
                               still reading the ring are waited for before it)
TILELANG_CUDA_CP_ASYNC_REFILL_UNDER_WGMMA=0  with the refill at the body's barrier, a wgmma gemm right after that
                               barrier (the dQ product) is waited for at once, the refill issued after it, not
                               issued, the refill issued while it runs, and waited for before its next statement
TILELANG_CUDA_CP_ASYNC_PRELOAD=0  a shared tile loaded right before a cp.async pipeline whose body alone reads
                               it (the FlashAttention backward's K and V) is loaded and stored by the threads
                               before the prologue, not issued as cp.async in the prologue's first group (on:
                               its load overlaps the first iterations' copies)
TILELANG_CUDA_TMA_STORE_SHARED_WAIT=0  consecutive bulk (TMA) stores of shared tiles (the attention backward's dV
                               and dK epilogue) each wait for their tile to be read, not once after the last
TILELANG_CUDA_STREAMING_OCCUPANCY=1  a memory-bound kernel (no gemm, no pipelined loop) asks ptxas for as many
                               blocks an SM as its threads allow (__launch_bounds__ second argument), not where it spills
TILELANG_CUDA_REGISTER_PREFETCH=0  a serial loop that starts by copying global tiles into fragments (a chunked
                               RMSNorm / softmax row) loads each tile at the top of its own iteration, not one
                               iteration ahead into staging registers
TILELANG_CUDA_SELECTIVE_PROXY_FENCES=0  every block barrier of a kernel with TMA stores fences shared memory toward
                               the async proxy (default: not those after element-wise nests on tiles no TMA store reads)
TILELANG_CUDA_GEMM_SELECTIVE_FENCES=0  that selection only in kernels without gemms, at their top level (default: also
                               with gemms, wgmma's shared operands counting as async-proxy tiles, and between two
                               barriers of a loop body: the sparse MLA backward's dKV staging and atomics)
TILELANG_CUDA_FENCE_FIRST_ITERATION=0  with the above: a loop body's first barrier fences in every iteration when what ran
                               before the loop wrote a wgmma operand (default: in the first iteration only, if the
                               loop body itself writes none before it)
TILELANG_CUDA_PAD_ATOMIC_STAGING=0  a 32-bit shared tile that stages an accumulator for global atomics keeps dense
                               rows (default: 16-byte row padding; rows of 128-byte multiples had 8-way bank conflicts)

TILELANG_CUDA_WS_ATTENTION=1   a producer warpgroup feeds every attention-style TMA-ring loop (FlashAttention, MLA
                               decode); default: where its ring issues 8 or more boxes an iteration (MLA); 0: never
TILELANG_CUDA_UNFENCED_MBARRIER_CP_ASYNC=1  barriers of threads whose cp.async land on an mbarrier do not
                               fence them (plan/proxy_fences.py: their reader fences after its wait); opt-in, slower
                               on the pipelined sparse MLA forward (H200)
TILELANG_CUDA_ITERATION_DISJOINT=1  a serial loop's iterations carry nothing through shared buffers they touch
                               at different elements (plan/sync.py); opt-in, slower on the same kernel
TILELANG_CUDA_COVERED_BARRIERS=0  keep every barrier a cross-warp register reduction already provides (the
                               planner then orders shared memory around it again) and the barrier at the top of a
                               warp-specialized ring loop whose body writes shared memory (MLA decode's P tile);
                               default: left out where the body's own barriers order what one iteration carries
TILELANG_CUDA_WGMMA_UNIFORM_WG=1  a shared-operand wgmma takes its warpgroup index broadcast from lane 0, so that ptxas
                               keeps the descriptors in uniform registers (opt-in: MLA decode b1 measured 2% slower)
TILELANG_CUDA_DUMP_FRAGMENTS=1 print the fragment layouts the planner chose
TILELANG_CUDA_CONVERTING_COPY_PIPELINE=0  a T.Pipelined loop runs a converting global -> shared
                               copy (bf16 tensor into a float32 tile) in place (not issued ahead)
TILELANG_CUDA_EPILOGUE_TMA_STORE=0  a GEMM's accumulator store after its pipelined loop is stored per thread, not
                               through a swizzled shared tile over the ring's slots and a TMA store (plan/stage_epilogue.py)
TILELANG_CUDA_WS_MULTICAST=0   warp-specialized GEMM blocks run alone, not in pairs that multicast the tiles both
                               read (plan/warp_specialized_ring.py)
TILELANG_CUDA_MIN_BLOCKS=n      __launch_bounds__(threads, n) where the kernel sets no
                               T.annotate_min_blocks_per_sm (default 1, as published; 0: leave it out)
TL_CUDA_DUMP=<dir>             keep every generated .cu file (and the source of a failed compile)
TILELANG_CUDA_NVRTC_PCH=0      NVRTC parses the CUDA headers in every compile (default: once a process, kept as an
                               automatic precompiled header; the cubin is the same)
TILELANG_CUDA_NVRTC_SPLIT_COMPILE=n  NVRTC --split-compile=n: its optimizer on n threads (default 0: off)
TILELANG_CUDA_NVRTC_FAST_COMPILE=min|mid|max  NVRTC --Ofast-compile=<level>: a faster compile, less optimized
                               code (default: not given; mid keeps attention accumulators in local memory)
TILELANG_CUDA_PTXAS_OPT_LEVEL=n  ptxas -O<n> (0..3) inside NVRTC (default: not given, ptxas's -O3)
TILELANG_CUDA_NVRTC_TIME=1     record NVRTC's own split of each compile (front end, NVVM, ptxas) in
                               Compiled.phases (benchmarks/cold_compile.py sets it; the cubin is the same)
TL_CUDA_LINEINFO=1             NVRTC -lineinfo (source lines in the cubin, for profilers)
"""
from __future__ import annotations

import os


def cache_dir() -> str:
    d = os.environ.get("TILELANG_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tilelang")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        pass   # the cache degrades to recompiling (jit/cache.py warns once)
    return d


def cache_disabled() -> bool:
    return os.environ.get("TILELANG_DISABLE_CACHE", "0").lower() in ("1", "true", "yes", "on")


def _find_cuda_home():
    """A CUDA toolkit directory, as the published `tilelang.env.CUDA_HOME` reports it (we
    compile with NVRTC from pip wheels and need none; scripts print it)."""
    import shutil
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        return home
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return "/usr/local/cuda" if os.path.isdir("/usr/local/cuda") else None


# The published `Environment`'s settings that scripts read, as (environment variable, default).
# Both packages read them from the environment on every access; we act on the ones listed in this
# module's docstring and report the others as the user set them.
_PUBLISHED_SETTINGS = {
    "TILELANG_TMP_DIR": ("TILELANG_TMP_DIR", None),
    "TILELANG_PRINT_ON_COMPILATION": ("TILELANG_PRINT_ON_COMPILATION", "1"),
    "TILELANG_DISABLE_CACHE": ("TILELANG_DISABLE_CACHE", "0"),
    "TILELANG_CLEANUP_TEMP_FILES": ("TILELANG_CLEANUP_TEMP_FILES", "0"),
    "TL_LOWER_TRACE": ("TL_LOWER_TRACE", "0"),
    "TL_LOWER_TRACE_DIR": ("TL_LOWER_TRACE_DIR", "tmp/lower_trace_dir"),
    "TILELANG_PASS_PROFILE": ("TILELANG_PASS_PROFILE", "0"),
    "TILELANG_PASS_PROFILE_THRESHOLD_MS": ("TILELANG_PASS_PROFILE_THRESHOLD_MS", "0"),
    "TILELANG_AUTO_TUNING_DISABLE_CACHE": ("TILELANG_AUTO_TUNING_DISABLE_CACHE", "0"),
    "TILELANG_AUTO_TUNING_CPU_UTILITIES": ("TILELANG_AUTO_TUNING_CPU_UTILITIES", "0.9"),
    "TILELANG_AUTO_TUNING_CPU_COUNTS": ("TILELANG_AUTO_TUNING_CPU_COUNTS", "-1"),
    "TILELANG_AUTO_TUNING_MAX_CPU_COUNT": ("TILELANG_AUTO_TUNING_MAX_CPU_COUNT", "-1"),
    "TILELANG_DEFAULT_TARGET": ("TILELANG_DEFAULT_TARGET", "auto"),
    "TILELANG_DEFAULT_EXECUTION_BACKEND": ("TILELANG_EXECUTION_BACKEND", "auto"),
    "TILELANG_DEFAULT_VERBOSE": ("TILELANG_VERBOSE", "0"),
}


class Environment:
    """`from tilelang.env import env`: the published package's settings object, for the
    attributes scripts read."""
    CUDA_HOME = _find_cuda_home()

    @property
    def TILELANG_CACHE_DIR(self):  # noqa: N802 - the published attribute name
        return cache_dir()

    def __getattr__(self, name):
        if name not in _PUBLISHED_SETTINGS:
            raise AttributeError(f"tilelang.env has no setting {name!r}; known: TILELANG_CACHE_DIR, CUDA_HOME, "
                                 + ", ".join(sorted(_PUBLISHED_SETTINGS)))
        var, default = _PUBLISHED_SETTINGS[name]
        value = os.environ.get(var, default)
        if value is None and name == "TILELANG_TMP_DIR":
            value = os.path.join(cache_dir(), "tmp")
        return value


env = Environment()
CUDA_HOME = env.CUDA_HOME


def __getattr__(name):
    """`tilelang.env.TILELANG_CACHE_DIR`: in the published package `tilelang.env` is the settings
    object itself (its package root re-exports it over the module), so scripts read settings as
    attributes of `tilelang.env`; this module answers them from `env`."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(env, name)
