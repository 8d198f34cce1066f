"""A differential fuzzer for the compiler: random valid tile programs, each checked
against a numpy reference computed from the same description.

    spec       the program descriptions (frozen dataclasses, one per family) and their rules
    generate   random descriptions from a seed
    known      constructs known to fail today (left out unless --include-known)
    render     description -> kernel module source (a real file: the frontend reads source)
    reference  description -> inputs and the expected outputs with error bounds
    numerics   per-dtype rounding and error-bound arithmetic
    run        render + import + compile + run + compare one program -> Result
    pool       many programs in worker processes (timeouts, crashes)
    minimize   shrink a failing description
    report     summary tables and standalone repro files
    __main__   the CLI: python -m tilelang.testing.fuzz --target cpu|cuda --count N --seed S

Families: Elementwise (expression trees with casts, ragged tiles guarded by `if`,
T.if_then_else or predicated T.copy staging, dynamic M), CopyChain (global/shared/fragment
copies with offsets, windows and dtype conversion), Reduce (every kind over dim 0/1 of
shared and fragment buffers, clear on/off), Gemm (transpose flags, f32/f16 accumulators,
T.Pipelined stages 0..3, epilogues, a row reduction of the accumulator), TileChain (reduce
then broadcast back, the softmax pattern), LoopReduce (a pipelined copy-only loop
accumulating a fragment), Branch (runtime `if` on tensor values, indices, flags, scalar
parameters), Threads (T.get_thread_binding, shared memory, T.sync_threads, reads of other
threads' values), AtomicScalar/AtomicTile (T.atomic_add from many blocks and threads), GemmChain (the
attention pattern without the softmax: S = Q K^T, P = cast(S * scale) in a fragment or shared tile,
O += P V over a loop of key tiles)."""
# (the submodules `generate` and `minimize` keep their names: their functions are
# generate.generate and minimize.minimize)
from tilelang.testing.fuzz.generate import generate_many, program_seed
from tilelang.testing.fuzz.pool import Pool, run_all
from tilelang.testing.fuzz.run import Result, check

__all__ = ["generate_many", "program_seed", "Pool", "run_all", "Result", "check"]
