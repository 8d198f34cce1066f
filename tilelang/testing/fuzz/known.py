"""Known failures: constructs the fuzzer found the compiler (or its toolchain) getting
wrong, each a predicate over descriptions. The generator leaves them out unless asked
(`--include-known`), so that a run reports what is new; remove an entry once the
failure is fixed, and the fuzzer tests the construct again."""
from __future__ import annotations


# name -> predicate over descriptions. Empty now: the entries the fuzzer found were
# - "a per-thread atomic whose index loses the thread index" (the Staging family, session 17):
#   simplifying `H[(f(tx) * 0 + c) % bins]` took the thread index out and CUDA ran the atomic once a
#   block; transform/mark_per_thread.py decides on the kernel as written (tests/transform/
#   test_mark_per_thread.py); and, fixed in the CUDA backend with regression tests in
#   tests/backend/cuda/test_fuzz_findings.py,
# - "int32 absmax / min-max of negated values": ptxas 13.0 fused int32 max.s32 chains into
#   VIMNMX3 and dropped a negated operand's sign (tl_cuda/common.h now compares and selects);
# - "cast chain of one element as a vectorized copy": the register-tile copy match (now
#   ops/register_vector.py vector_copy_parts) stripped
#   every cast before recognizing a copy (now only a direct conversion is a copy).
KNOWN_FAILURES: dict = {}


def known_failure(p):
    """The name of the KNOWN_FAILURES entry that `p` hits, or None."""
    for name, hits in KNOWN_FAILURES.items():
        if hits(p):
            return name
    return None
