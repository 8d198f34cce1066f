"""Known failures: constructs the fuzzer found the compiler (or its toolchain) getting
wrong, each a predicate over descriptions. The generator leaves them out unless asked
(`--include-known`), so that a run reports what is new; remove an entry once the
failure is fixed, and the fuzzer tests the construct again."""
from __future__ import annotations

from tilelang.testing.fuzz import spec


# name -> predicate over descriptions. Empty now: the two entries the fuzzer found first
# (fixed in the CUDA backend, each with a regression test in
# tests/backend/cuda/test_fuzz_findings.py) were
# - "int32 absmax / min-max of negated values": ptxas 13.0 fused int32 max.s32 chains into
#   VIMNMX3 and dropped a negated operand's sign (tl_cuda/common.h now compares and selects);
# - "cast chain of one element as a vectorized copy": the register-tile copy match (now
#   ops/register_vector.py vector_copy_parts) stripped
#   every cast before recognizing a copy (now only a direct conversion is a copy).
KNOWN_FAILURES: dict = {
    # Found by the Staging family on the H200 (session 17): in a kernel that indexes threads
    # explicitly, `T.atomic_add(H[(f(tx) * 0 + c) % bins], 1)` loses its thread index when
    # lower_tile_ops simplifies the index; the CUDA backend then runs it once a block (thread 0,
    # its rule for block-level statements that name no thread), the CPU backend on every thread
    # (it runs such kernels' whole body per thread): 2 counts against 256. Which one a block-level
    # statement without a thread index means in an explicitly threaded kernel is to be settled
    # against the published package; then both backends follow it and this entry goes.
    "a per-thread atomic whose index loses the thread index": lambda p: spec.family(p) == "Staging" and
    bool(p.bins) and p.a == 0,
}


def known_failure(p):
    """The name of the KNOWN_FAILURES entry that `p` hits, or None."""
    for name, hits in KNOWN_FAILURES.items():
        if hits(p):
            return name
    return None
