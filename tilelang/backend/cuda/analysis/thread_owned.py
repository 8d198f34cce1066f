"""Shared-memory elements that one thread alone touches.

Per-thread code (statements indexed by the thread index, as in CUDA) that reaches a shared
buffer through an index whose address determines the thread needs no barrier against
itself: `B_shared[(i * 2048 + tx * 8 + v) // 128, (i * 2048 + tx * 8 + v) % 128] = ...` in a
serial loop over i writes, for every i and vector lane v, elements no other thread writes,
so one iteration's writes never race the next's (the published dequantize-GEMM examples
stage their dequantized tile this way, eight rounds a K tile; the warp-specialized MLA
decode example's producer issues `T.ptx_cp_async` to `KV[s, r * 16 + t // 8, u * 64 + t % 8 * 8]`,
36 copies a tile).

The address is the buffer's row-major offset (plus the lanes a cp.async writes), a sum of
digits times constants: loop variables with constant ranges, the thread indices, and
`x // c`, `x % c` of an affine x (`(x // c) * c + x % c` pairs fold back into x); block
indices are the same for every thread of a block and drop out. Ordered by the size of
their coefficient, digits from the lowest one that depends on the thread up must each
outweigh everything below them (a mixed-radix number: those digits are unique), and they
must give back every thread index: the index itself, or both `x // c` and `x % c` of an x
that is the index times a constant plus a constant."""
from __future__ import annotations

from typing import NamedTuple

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.async_copy import is_cp_async
from tilelang.ir.simplify import linear_form, structural_key
from tilelang.ir.visitor import walk


def address_terms(e):
    """`e` as ({key: (atom, coef)}, const), its atoms variables or `x // c`, `x % c` of a
    positive constant c, with `(x // c) * c + x % c` folded into x; None when it is not such
    a sum."""
    lin = linear_form(e)
    if lin is None:
        return None
    terms, const = lin
    out, divs, mods = {}, [], []
    for key, (atom, coef) in terms.items():
        if isinstance(atom, E.Var):
            _add(out, {key: (atom, coef)})
        elif isinstance(atom, E.BinOp) and atom.op in ("//", "%") and (E.const_int_value(atom.b) or 0) > 0:
            (divs if atom.op == "//" else mods).append((key, atom, coef))
        else:
            return None
    for key, mod, coef in mods:
        c = E.const_int_value(mod.b)
        pair = next((d for d in divs if E.const_int_value(d[1].b) == c and d[2] == coef * c
                     and structural_key(d[1].a) == structural_key(mod.a)), None)
        inner = address_terms(mod.a) if pair is not None else None
        if inner is None:   # a digit of its own
            _add(out, {key: (mod, coef)})
            continue
        divs.remove(pair)
        _add(out, {k: (a, cf * coef) for k, (a, cf) in inner[0].items()})
        const += inner[1] * coef
    for key, div, coef in divs:
        _add(out, {key: (div, coef)})
    return {k: t for k, t in out.items() if t[1] != 0}, const


def _add(out, terms):
    for k, (a, c) in terms.items():
        out[k] = (a, out[k][1] + c) if k in out else (a, c)


def _span(x, ranges):
    """(min, max) of the affine `x` over the variables' ranges, or None."""
    lin = linear_form(x)
    if lin is None:
        return None
    lo = hi = lin[1]
    for atom, c in lin[0].values():
        if not isinstance(atom, E.Var) or id(atom) not in ranges:
            return None
        a, n = ranges[id(atom)]
        lo, hi = lo + min(c * a, c * (a + n - 1)), hi + max(c * a, c * (a + n - 1))
    return lo, hi


def _only_thread(x, thread_ids):
    """The thread variable x is made of (times a constant, plus a constant), or None."""
    lin = linear_form(x)
    if lin is None or len(lin[0]) != 1:
        return None
    (atom, _), = lin[0].values()
    return id(atom) if isinstance(atom, E.Var) and id(atom) in thread_ids else None


def determines_thread(terms, thread_ids, ranges, uniform):
    """Whether an address with these `terms` (address_terms) tells which thread made it.
    `thread_ids`: ids of the thread indices, whose (min, extent) are in `ranges` with the
    loops' around and inside the access; `uniform`: ids of variables the same for every
    thread and fixed for the kernel's run (block indices)."""
    digits = []   # (|coef|, extent, the thread index it gives back, or a div/mod half of one)
    for atom, c in terms.values():
        if isinstance(atom, E.Var):
            if id(atom) in uniform:
                continue
            if id(atom) not in ranges:
                return False   # a value that may change between accesses or threads
            tag = ("thread", id(atom)) if id(atom) in thread_ids else None
            digits.append((abs(c), ranges[id(atom)][1], tag))
            continue
        span = _span(atom.a, ranges)
        if span is None:
            return False
        d = E.const_int_value(atom.b)
        ext = span[1] // d - span[0] // d + 1 if atom.op == "//" else d
        t = _only_thread(atom.a, thread_ids)
        tag = (atom.op, t, structural_key(atom.a), d) if t is not None else None
        if tag is None and any(id(v) in thread_ids for v in _vars(atom.a)):
            tag = ("mixed",)   # depends on the thread, gives back no index
        digits.append((abs(c), ext, tag))
    digits = sorted((d for d in digits if d[1] > 1), key=lambda d: (d[0], d[1]))
    below, recovered, started = 0, set(), False
    for coef, ext, tag in digits:
        started = started or tag is not None
        if started:
            if coef <= below:
                return False
            if tag is not None:
                recovered.add(tag)
        below += coef * (ext - 1)
    given_back = {t[1] for t in recovered if t[0] == "thread"}
    given_back |= {t[1] for t in recovered if t[0] == "//" and ("%",) + t[1:] in recovered}
    return all(t in given_back for t in thread_ids if ranges[t][1] > 1)


def _vars(e):
    found = []
    walk(e, lambda n: found.append(n) if isinstance(n, E.Var) else None)
    return found


class ShapedAccesses(NamedTuple):
    """What a statement does to some shared buffers, as the address analyses read it."""
    ranges: dict    # {id(var): (min, extent)}: the given ranges and the loops inside the statement
    indices: dict   # {id(buffer): [index tuples of its element accesses]}
    lanes: dict     # {id(buffer): elements a cp.async into it writes from its named one}
    escaped: set    # ids of buffers whose address goes to code not read here (T.access_ptr)


def shaped_accesses(st, candidates, ranges):
    """The ShapedAccesses of `st` to the buffers among `candidates` (id -> buffer), or None
    where a loop inside has no constant range or a `let` binds a value (no range to read)."""
    inner = dict(ranges)
    index_lists, lanes, escaped, copied, bad = {}, {}, set(), set(), []

    def f(n):
        if isinstance(n, S.For):
            lo, ext = E.const_int_value(n.min), E.const_int_value(n.extent)
            if lo is None or ext is None or n.step is not None:
                bad.append(n)
            else:
                inner[id(n.var)] = (lo, ext)
        elif isinstance(n, S.LetStmt):
            bad.append(n)   # a bound value: not a variable with a range
        if is_cp_async(n):
            dst = E.addressed_load(n.args[0])
            nbytes = E.const_int_value(n.args[2])
            if dst is not None and nbytes is not None and id(dst.buffer) in candidates:
                copied.add(id(n.args[0]))
                n_el = max(1, nbytes * 8 // dst.buffer.dtype.bits)
                lanes[id(dst.buffer)] = max(lanes.get(id(dst.buffer), 1), n_el)
        ld = E.addressed_load(n) if isinstance(n, E.Call) else None
        if ld is not None and id(n) not in copied:
            escaped.add(id(ld.buffer))   # its address escapes to code we do not read
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and id(n.buffer) in candidates:
            index_lists.setdefault(id(n.buffer), []).append(n.indices)
    walk(st, f)
    return None if bad else ShapedAccesses(inner, index_lists, lanes, escaped)


def owned_buffers(st, candidates, thread_ids, ranges, uniform):
    """Ids of the buffers among `candidates` (id -> buffer) that statement `st` reaches only
    through one index tuple (by element, or as the destination of a cp.async), whose
    elements' offsets determine the thread. `ranges`: {id(var): (min, extent)} of the thread
    indices and of the loops around `st`."""
    acc = shaped_accesses(st, candidates, ranges)
    if acc is None:
        return set()
    inner, lanes = acc.ranges, acc.lanes
    out = set()
    for b, index_list in acc.indices.items():
        if b in acc.escaped or len({tuple(structural_key(i) for i in ix) for ix in index_list}) > 1:
            continue   # its address escapes, or it is reached through more than one index tuple
        terms, n = flat_terms(candidates[b], index_list[0]), lanes.get(b, 1)
        if terms is None:
            continue
        if n > 1:
            terms = {**terms, ("lane",): (LANE, 1)}
        if determines_thread(terms, thread_ids, {**inner, id(LANE): (0, n)}, uniform):
            out.add(b)
    return out


# the elements a cp.async writes after the one its destination names: one more digit
LANE = E.Var("cp_async_lane", "int32")


def flat_terms(buffer, indices):
    """address_terms of the row-major offset of `buffer[indices]` (without the constant), or
    None (a shape that is not constant, an index that is not such a sum)."""
    terms = flat_address(buffer, indices)
    return None if terms is None else terms[0]


def flat_address(buffer, indices):
    """address_terms (terms, constant) of the row-major offset of `buffer[indices]`, or None."""
    shape = [E.const_int_value(s) for s in buffer.shape]
    if None in shape or len(shape) != len(indices) or not all(i.dtype.is_int for i in indices):
        return None
    flat, stride = None, 1
    for idx, ext in reversed(list(zip(indices, shape))):
        term = idx if stride == 1 else E.BinOp("*", idx, E.IntImm(stride, idx.dtype), idx.dtype)
        flat = term if flat is None else E.BinOp("+", flat, term, idx.dtype)
        stride *= ext
    return address_terms(flat)
