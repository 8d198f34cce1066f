"""Shared buffers that different iterations of a serial loop touch at different elements.

The barrier planner analyses a loop body twice, so that what one iteration leaves unordered
meets the next iteration's accesses (plan/sync.py). Where every access to a buffer in the body
has an address `c * k + rest`, k the loop variable, and `rest` spans less than |c| over the
threads and the loops inside the body (the same uniform part in every access), iteration k
touches only elements in [c * k + lo, c * k + hi] with hi - lo < |c|: two iterations never
meet at an element, and nothing is carried from one to the next through that buffer. The
sparse MLA forward's producer writes `is_kv_valid[stage, r * 16 + (tx - 256) // 8]` and reads
it back after a barrier in each of 4 rounds r: without this, a second barrier before each
round's write orders it after the previous round's reads of other elements. Opt-in
(TILELANG_CUDA_ITERATION_DISJOINT=1): on the H200 that kernel ran slower with one barrier a round
(0.0360 -> 0.0386 ms), though the published package's has one.

Addresses are the buffer's row-major offsets as analysis/thread_owned.py reads them (sums of
variables, and of `x // c`, `x % c`, times constants); a cp.async destination covers the
elements its bytes write; an address handed to other code (T.access_ptr) disqualifies."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.backend.cuda.analysis.thread_owned import flat_address, shaped_accesses, _span, _vars


def disjoint_across_iterations(loop, candidates, ranges, uniform):
    """Ids of the buffers among `candidates` (id -> buffer) that no two iterations of the
    serial `loop` touch at the same element. `ranges`: {id(var): (min, extent)} of the thread
    indices (over the threads that run the loop) and the loops around it; `uniform`: ids of
    variables fixed for the kernel's run (block indices)."""
    if E.const_int_value(loop.extent) in (None, 0, 1) or loop.step is not None:
        return set()
    acc = shaped_accesses(loop.body, candidates, ranges)
    if acc is None:
        return set()
    k = id(loop.var)
    out = set()
    for b, index_list in acc.indices.items():
        if b not in acc.escaped and _disjoint(candidates[b], index_list, k, acc.ranges, uniform, acc.lanes.get(b, 1)):
            out.add(b)
    return out


def _disjoint(buf, index_list, k, ranges, uniform, lanes):
    coef, base, lo, hi = None, None, None, None
    for indices in index_list:
        addr = flat_address(buf, indices)
        if addr is None:
            return False
        terms, const = addr
        c, fixed, vlo, vhi = 0, [], const, const + lanes - 1
        for key, (atom, a) in terms.items():
            if isinstance(atom, E.Var) and id(atom) == k:
                c = a
                continue
            if any(id(v) == k for v in _vars(atom)):
                return False   # the loop variable inside a div / mod: not one digit
            if isinstance(atom, E.Var) and (id(atom) in uniform or id(atom) not in ranges):
                # block indices, kernel arguments, outer loops' variables of no constant range:
                # the same in every iteration and thread of the loop
                fixed.append((key, a))
                continue
            span = _span(atom, ranges) if isinstance(atom, E.Var) else _span_divmod(atom, ranges)
            if span is None:
                return False
            vlo, vhi = vlo + min(a * span[0], a * span[1]), vhi + max(a * span[0], a * span[1])
        key = tuple(sorted(fixed, key=lambda t: str(t[0])))
        if c == 0 or coef is not None and (c != coef or key != base):
            return False
        coef, base = c, key
        lo, hi = (vlo, vhi) if lo is None else (min(lo, vlo), max(hi, vhi))
    return coef is not None and hi - lo < abs(coef)


def _span_divmod(atom, ranges):
    """(min, max) of `x // c` or `x % c` over the variables' ranges, or None."""
    span = _span(atom.a, ranges)
    d = E.const_int_value(atom.b)
    if span is None or not d or d <= 0:
        return None
    if atom.op == "//":
        return span[0] // d, span[1] // d
    return (span[0] % d, span[1] % d) if span[1] - span[0] < d and span[0] % d <= span[1] % d else (0, d - 1)


__all__ = ["disjoint_across_iterations"]
