"""`T.rng_init`, `T.rng_rand`, `T.rng_rand_float`: a per-thread random generator of one of
cuRAND's device families, with cuRAND's stream layout (`curand_init(seed, seq, off)`, then
`curand`, `curand_uniform`, `curand_normal` and their double forms): Philox4x32-10 (the
default), XORWOW and MRG32k3a (`generator=` their cuRAND state names). The CPU and CUDA
backends run the same algorithms (backend/c/include/tl_philox.h, tl_rng_families.h), so
a thread's draws are the same on both. On the CPU one thread does a block's work: a
T.Parallel loop there draws from one generator where the GPU's threads draw from one
each, so the two agree for one-thread blocks and for kernels written per thread.
On the H200 the XORWOW and MRG32k3a draws equal cuRAND's own (tests/backend/cuda/
test_run_gpu_random_families.py); MRG32k3a subsequences from 2^51 on are skipped exactly
here, where cuRAND documents 51 bits (its skip tables stop at 2^56).

The generator's state is a hidden per-thread array declared at the top of the kernel
(a `T.rng_init` inside a branch still reaches the draws after it); each draw is taken
where it is written, once, as a statement of its own. Every tl.rng_* call names its
generator in its last argument."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer
from tilelang.ir.dtypes import DataType
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import BufferLoad, IntImm, StringImm, access_ptr, call, cast, convert

PHILOX = "curandStatePhilox4_32_10_t"
GENERATORS = (PHILOX, "curandStateMRG32k3a_t", "curandStateXORWOW_t")
STATE_WORDS = 16   # include/tl_cuda/random.h's layout
U64 = DataType("uint64")


def _kernel(what):
    b = B.require(what)
    if not b.kernel_frames:
        raise TileLangError(f"{what} can only be used inside `with T.Kernel(...)`")
    return b, b.kernel_frames[-1]


def _u64(x):
    if isinstance(x, Buffer) and x.is_var():
        x = x.load()
    x = convert(x)
    if x.dtype.is_float:
        raise TileLangError(f"T.rng_init takes integer seeds, subsequences and offsets, got {x.dtype}")
    return cast(x, U64)


def rng_init(seed, seq=None, off=0, generator=PHILOX):
    """Start this thread's generator: `seed` picks the stream, `seq` the subsequence
    (2^66 draws apart for Philox, 2^67 for XORWOW, 2^76 for MRG32k3a; default: the thread's index in the grid along x, tx + bx *
    threads) and `off` the draw to start at within it."""
    if generator not in GENERATORS:
        raise TileLangError(f"T.rng_init: unknown generator {generator!r}",
                            hint=f"use one of {', '.join(map(repr, GENERATORS))}")
    b, frame = _kernel("T.rng_init")
    if getattr(frame, "rng_generator", generator) != generator:   # one state array, one family
        raise TileLangError(f"T.rng_init: this kernel's generator is {frame.rng_generator}, not {generator}",
                            hint="use one generator family per kernel")
    frame.rng_generator = generator
    if seq is None:
        # the thread index is the backend's business: the CPU runs a block as its thread 0
        seq = frame.block_vars[0] * frame.threads[0] + call("tl.rng_lane", [], "int32")
    state = getattr(frame, "rng_state", None)
    if state is None:
        state = frame.rng_state = Buffer("rng_state", (STATE_WORDS,), DataType("uint32"), "local")
        b.stack[frame.body_level].insert(0, S.DeclBuffer(state))
    b.emit(S.Evaluate(call("tl.rng_init", [_state_ptr(state), _u64(seed), _u64(seq), _u64(off),
                                           StringImm(generator)], "handle")))


def _state_ptr(state):
    return access_ptr(BufferLoad(state, [IntImm(0)]), 3)


def _draw(name, args, dtype, what):
    """The draw as a fresh per-thread variable assigned here, so that it happens once
    and in program order however often its value is used."""
    b, frame = _kernel(what)
    state = getattr(frame, "rng_state", None)
    if state is None:
        raise TileLangError(f"{what} needs a generator: call T.rng_init(seed) first in this kernel")
    names = B.source_names("assign")
    var = Buffer(names[0] if names else "rand", (1,), DataType(dtype), "local.var")
    b.emit(S.DeclBuffer(var))
    b.emit(S.BufferStore(var, call(name, [_state_ptr(state), *args, StringImm(frame.rng_generator)], dtype),
                         [IntImm(0)]))
    return BufferLoad(var, [IntImm(0)])


def rng_rand():
    """The next 32 random bits of this thread's generator, as a uint32."""
    return _draw("tl.rng_rand", [], "uint32", "T.rng_rand")


def rng_rand_float(bit=32, dist="uniform"):
    """A float32 (`bit=32`) or float64 draw: uniform in (0, 1], or standard normal."""
    if bit not in (32, 64):
        raise TileLangError(f"T.rng_rand_float: bit must be 32 or 64, got {bit!r}")
    if dist not in ("uniform", "normal"):
        raise TileLangError(f"T.rng_rand_float: dist must be 'uniform' or 'normal', got {dist!r}")
    return _draw("tl.rng_rand_float", [StringImm(dist)], f"float{bit}", "T.rng_rand_float")
