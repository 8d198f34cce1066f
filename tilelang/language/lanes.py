"""Vector values, lane by lane: `T.extract_lane(v, i)` reads lane `i` of a vector-typed
value (`T.alloc_var(T.float16x2)`), and a vector dtype called with one value per lane,
`T.float16x2(a, b)`, builds one (ir/expr.py `make_vector`). Both are `Shuffle` expressions."""
from __future__ import annotations

from tilelang.ir import expr as E

Shuffle = E.Shuffle


def extract_lane(vector, lane):
    """Lane `lane` (a compile-time int) of the vector expression `vector`, as a scalar of
    its element type."""
    from tilelang.ir.buffer import Buffer
    if isinstance(vector, Buffer) and vector.is_var():   # T.alloc_var of a vector dtype
        vector = vector.load()
    if not isinstance(vector, E.PrimExpr):
        raise TypeError(f"T.extract_lane expects a PrimExpr vector, got {type(vector).__name__}")
    if not vector.dtype.is_vector:
        raise ValueError(f"T.extract_lane expects a vector expression, got the scalar type {vector.dtype}")
    if isinstance(lane, E.IntImm):
        lane = lane.value
    if isinstance(lane, bool) or not isinstance(lane, int):
        raise TypeError(f"T.extract_lane: the lane must be a compile-time integer, got {lane!r}")
    if not 0 <= lane < vector.dtype.lanes:
        raise IndexError(f"T.extract_lane: lane {lane} is out of bounds for {vector.dtype} "
                         f"({vector.dtype.lanes} lanes)")
    return E.Shuffle([vector], [lane])
