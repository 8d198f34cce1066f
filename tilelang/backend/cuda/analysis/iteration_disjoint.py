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
from tilelang.ir import stmt as S
from tilelang.ir.async_copy import is_cp_async
from tilelang.ir.simplify import structural_key
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.analysis.thread_owned import flat_address, _span


def disjoint_across_iterations(loop, candidates, ranges, uniform):
    """Ids of the buffers among `candidates` (id -> buffer) that no two iterations of the
    serial `loop` touch at the same element. `ranges`: {id(var): (min, extent)} of the thread
    indices (over the threads that run the loop) and the loops around it; `uniform`: ids of
    variables fixed for the kernel's run (block indices)."""
    if E.const_int_value(loop.extent) in (None, 0, 1) or loop.step is not None:
        return set()
    inner = dict(ranges)
    found, lanes, bad, copied = {}, {}, set(), set()

    def f(n):
        if isinstance(n, S.For):
            lo, ext = E.const_int_value(n.min), E.const_int_value(n.extent)
            if lo is None or ext is None or n.step is not None:
                bad.add("loop")
            else:
                inner[id(n.var)] = (lo, ext)
        elif isinstance(n, S.LetStmt):
            bad.add("loop")   # a bound value: not a variable with a range
        if is_cp_async(n):
            dst = E.addressed_load(n.args[0])
            nbytes = E.const_int_value(n.args[2])
            if dst is not None and nbytes is not None and id(dst.buffer) in candidates:
                copied.add(id(n.args[0]))
                lanes[id(dst.buffer)] = max(lanes.get(id(dst.buffer), 1), max(1, nbytes * 8 // dst.buffer.dtype.bits))
        ld = E.addressed_load(n) if isinstance(n, E.Call) else None
        if ld is not None and id(n) not in copied and id(ld.buffer) in candidates:
            bad.add(id(ld.buffer))   # its address escapes to code we do not read
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and id(n.buffer) in candidates:
            found.setdefault(id(n.buffer), []).append(n.indices)
    walk(loop.body, f)
    if "loop" in bad:
        return set()
    k = id(loop.var)
    out = set()
    for b, index_list in found.items():
        if b not in bad and _disjoint(candidates[b], index_list, k, inner, uniform, lanes.get(b, 1)):
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


def _vars(e):
    found = []
    walk(e, lambda n: found.append(n) if isinstance(n, E.Var) else None)
    return found


__all__ = ["disjoint_across_iterations"]
