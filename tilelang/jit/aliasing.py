"""Tensors passed to two parameters of one kernel: the kernel's pointers are `__restrict__`
and its loads may be reordered across its stores, so a tensor (or overlapping views of one)
given to a parameter the kernel writes and to another one is refused at call time -- unless
the kernel declares them overlapping (`T.annotate_restrict_buffers`). Reading one tensor
through two parameters is fine."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.visitor import walk
from tilelang import arrays

_READ_ONLY_FIELDS = {TO.Copy: ("src",), TO.Reduce: ("src",), TO.CumSum: ("src",), TO.Gemm: ("A", "B"),
                     TO.Atomic: ("value",)}


def written_params(func) -> set:
    """ids of the tensor parameters the function may write."""
    params = {id(p) for p in func.params if isinstance(p, Buffer)}
    out = set()

    def buffers_in(x):
        found = []
        walk(x, lambda n: found.append(n.buffer) if isinstance(n, E.BufferLoad) else None)
        if isinstance(x, BufferRegion):
            found.append(x.buffer)
        elif isinstance(x, Buffer):
            found.append(x)
        return found

    def visit(n):
        if isinstance(n, S.BufferStore):
            out.add(id(n.buffer))
        elif isinstance(n, TO.TileOp):
            skip = _READ_ONLY_FIELDS.get(type(n), ())
            for k, v in vars(n).items():
                if k in skip or k.startswith("_"):
                    continue
                for x in (v if isinstance(v, (list, tuple)) else [v]):
                    if isinstance(x, (Buffer, BufferRegion)):
                        out.update(id(b) for b in buffers_in(x))
        elif isinstance(n, E.Call) and n.name == E.ACCESS_PTR:   # an address for the callee: its mask
            mask = E.const_int_value(n.args[1]) if len(n.args) > 1 else 3
            if mask is None or mask & 2:
                out.update(id(b) for b in buffers_in(n.args[0]))
        elif isinstance(n, E.Call) and (n.name.startswith("atomic_") or n.name == "tl.atomic_store"):
            out.update(id(b) for b in buffers_in(n.args[0]))
    walk(func.body, visit)
    return out & params


def byte_range(a):
    """[first, last) bytes an array or tensor argument spans."""
    if arrays.is_torch(a):
        start, item = a.data_ptr(), a.element_size()
        span = 1 + sum((s - 1) * abs(st) for s, st in zip(a.shape, a.stride())) if a.numel() else 0
        return start, start + span * item
    import numpy as np
    bounds = np.lib.array_utils.byte_bounds if hasattr(np.lib, "array_utils") else np.byte_bounds
    return bounds(a)


def check(params, args, written, span=None):
    """Raise if a written parameter's argument overlaps another tensor argument."""
    from tilelang.ir.errors import ArgumentError
    tensors = [(p, a) for p, a in zip(params, args) if isinstance(p, Buffer) and arrays.is_array(a)
               and not getattr(p, "may_alias", False)]
    if len(tensors) < 2:
        return
    ranges = [byte_range(a) for _, a in tensors]
    for x in range(len(tensors)):
        for y in range(x + 1, len(tensors)):
            (p, _), (q, _) = tensors[x], tensors[y]
            if id(p) not in written and id(q) not in written:
                continue
            (a0, a1), (b0, b1) = ranges[x], ranges[y]
            if a0 < b1 and b0 < a1:
                w = p if id(p) in written else q
                raise ArgumentError(f"arguments `{p.name}` and `{q.name}` share memory, and the kernel writes "
                                    f"`{w.name}`: its loads and stores assume separate tensors", span,
                                    hint=f"pass a copy (e.g. {q.name}.clone()), or declare the overlap with "
                                         f"T.annotate_restrict_buffers({p.name}, {q.name}) in the kernel")
