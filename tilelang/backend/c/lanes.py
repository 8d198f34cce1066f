"""C++ for vector values, shared by the C++-printing backends: a vector dtype is
`tl::vec<T, N>` (include headers: N lanes of T), and a Shuffle (ir/expr.py) picks lanes
of its vectors — one lane is a scalar, several build a new vector."""
from __future__ import annotations

from tilelang.ir import expr as E


def vector_ctype(dt, element_ctype):
    return f"tl::vec<{element_ctype}, {dt.lanes}>"


def shuffle_source(call, render, ctype, scalar_ctor=None):
    """`render(expr)` prints an operand, `ctype(dtype)` names a type, `scalar_ctor` the
    constructor spelling of one lane's type (defaults to its C type)."""
    vectors, indices = E.shuffle_parts(call)
    lanes = []
    for v in vectors:
        s = render(v)
        lanes += [f"({s}).v[{k}]" for k in range(v.dtype.lanes)] if v.dtype.is_vector else [s]
    picked = [lanes[i.value] for i in indices]
    if call.dtype.is_vector:
        return f"{ctype(call.dtype)}({', '.join(picked)})"
    return f"{(scalar_ctor or ctype)(call.dtype)}({picked[0]})"
