"""Shared-memory elements that one thread alone touches.

Per-thread code (statements indexed by the thread index, as in CUDA) that reaches a shared
buffer through an index whose address determines the thread needs no barrier against
itself: `B_shared[(i * 2048 + tx * 8 + v) // 128, (i * 2048 + tx * 8 + v) % 128] = ...` in a
serial loop over i writes, for every i and vector lane v, elements no other thread writes,
so one iteration's writes never race the next's (the published dequantize-GEMM examples
stage their dequantized tile this way, eight rounds a K tile).

The address is the buffer's row-major offset, an affine sum of the thread indices, loop
variables with constant ranges and block indices (the same for every thread of a block);
`(x // c) * c + x % c` pairs, which a flat index split into rows and columns makes, fold
back into x. The thread is determined when, with the terms ordered by the size of their
coefficient, each term from the lowest thread index up outweighs everything below it
(a mixed-radix number: its digits from the top down are unique)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.simplify import linear_form, structural_key
from tilelang.ir.visitor import walk


def affine_vars(e):
    """`e` as ({id(var): (var, coef)}, const) over variables alone, with `(x // c) * c + x % c`
    folded into x; None when it is not such a sum."""
    lin = linear_form(e)
    if lin is None:
        return None
    terms, const = lin
    out = {}
    divs, mods = [], []
    for atom, coef in terms.values():
        if isinstance(atom, E.Var):
            _add(out, {id(atom): (atom, coef)})
        elif isinstance(atom, E.BinOp) and atom.op in ("//", "%") and (E.const_int_value(atom.b) or 0) > 0:
            (divs if atom.op == "//" else mods).append((atom, coef))
        else:
            return None
    for mod, coef in mods:
        c = E.const_int_value(mod.b)
        inner = affine_vars(mod.a)
        if inner is None:
            return None
        pair = next((d for d in divs if E.const_int_value(d[0].b) == c and d[1] == coef * c
                     and _signature(affine_vars(d[0].a)) == _signature(inner)), None)
        if pair is None:
            return None
        divs.remove(pair)
        _add(out, {k: (v, cf * coef) for k, (v, cf) in inner[0].items()})
        const += inner[1] * coef
    if divs:
        return None
    return {k: t for k, t in out.items() if t[1] != 0}, const


def _add(out, terms):
    for k, (v, c) in terms.items():
        out[k] = (v, out[k][1] + c) if k in out else (v, c)


def _signature(aff):
    if aff is None:
        return None
    return frozenset((k, c) for k, (_, c) in aff[0].items()), aff[1]


def flat_offset(buffer, indices):
    """The row-major element offset of `buffer[indices]` as affine_vars, or None (a shape
    that is not constant, an index that is not affine)."""
    shape = [E.const_int_value(s) for s in buffer.shape]
    if None in shape or len(shape) != len(indices):
        return None
    flat, stride = E.IntImm(0, "int32"), 1
    for idx, ext in reversed(list(zip(indices, shape))):
        if not idx.dtype.is_int:
            return None
        flat = E.BinOp("+", flat, E.BinOp("*", idx, E.IntImm(stride, idx.dtype), idx.dtype), idx.dtype) \
            if stride != 1 else E.BinOp("+", flat, idx, idx.dtype)
        stride *= ext
    return affine_vars(flat)


def determines_thread(aff, thread_extents, ranges, uniform):
    """Whether the affine address `aff` (affine_vars) tells which thread made it.
    `thread_extents`: {id(thread var): extent}; `ranges`: {id(loop var): (min, extent)} of the
    loops around and inside the access; `uniform`: ids of variables the same for every thread
    and fixed for the kernel's run (block indices)."""
    terms, _ = aff
    digits = []   # (|coef|, extent, is a thread index)
    for k, (_, c) in terms.items():
        if k in thread_extents:
            digits.append((abs(c), thread_extents[k], True))
        elif k in ranges:
            digits.append((abs(c), ranges[k][1], False))
        elif k not in uniform:
            return False   # a value that may change between accesses or threads
    if any(ext > 1 and k not in terms for k, ext in thread_extents.items()):
        return False   # threads that differ only there share the address
    digits = sorted(d for d in digits if d[1] > 1)
    below, seen_thread = 0, False
    for coef, ext, is_thread in digits:
        seen_thread = seen_thread or is_thread
        if seen_thread and coef <= below:
            return False
        below += coef * (ext - 1)
    return seen_thread


def owned_buffers(st, candidates, thread_extents, ranges, uniform):
    """Ids of the buffers among `candidates` (id -> buffer) that statement `st` reaches only
    through one index tuple, not by address, whose offset determines the thread."""
    inner = dict(ranges)
    index_of, bad = {}, set()

    def f(n):
        if isinstance(n, S.For):
            lo, ext = E.const_int_value(n.min), E.const_int_value(n.extent)
            if lo is None or ext is None or n.step is not None:
                bad.add("loop")
            else:
                inner[id(n.var)] = (lo, ext)
        elif isinstance(n, S.LetStmt):
            bad.add("loop")   # a bound value: not an affine variable with a range
        ld = E.addressed_load(n) if isinstance(n, E.Call) else None
        if ld is not None:
            bad.add(id(ld.buffer))   # its address escapes
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and id(n.buffer) in candidates:
            key = tuple(structural_key(i) for i in n.indices)
            if index_of.setdefault(id(n.buffer), (key, n.indices))[0] != key:
                bad.add(id(n.buffer))
    walk(st, f)
    if "loop" in bad:
        return set()
    out = set()
    for b, (_, indices) in index_of.items():
        if b in bad:
            continue
        aff = flat_offset(candidates[b], indices)
        if aff is not None and determines_thread(aff, thread_extents, inner, uniform):
            out.add(b)
    return out
