"""Cross-thread reductions written in TVM's form:

    with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, dt)]), "reduce_scope", ...):
        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), value, True, out[0], tk, dtype="handle"))

`T.attr` opens the scope of the reducer; `T.tvm_thread_allreduce` records one
`ThreadAllReduce` statement: every thread gets, in `out[0]`, the combination of
`value` over the threads that differ only in the thread indices named (`tk`)."""
from __future__ import annotations

from contextlib import contextmanager

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import PrimExpr, Var, BufferLoad, IntImm, convert, cast, as_bool, const_int_value
from tilelang.ir.errors import TileLangError


class CommReducer:
    """`T.comm_reducer(combine, [identity])`: an associative, commutative operator as an
    expression in two variables, with its identity element."""

    def __init__(self, combine, identity):
        ids = list(identity) if isinstance(identity, (list, tuple)) else [identity]
        if len(ids) != 1:
            raise TileLangError(f"T.comm_reducer with {len(ids)} values: only single-value reducers are "
                                f"supported")
        ident = ids[0]
        if isinstance(ident, Buffer) and ident.is_var():
            ident = ident.load()
        self.identity = convert(ident)
        dt = self.identity.dtype
        self.lhs, self.rhs = Var("x", dt), Var("y", dt)
        out = combine(self.lhs, self.rhs)
        if isinstance(out, (list, tuple)) and len(out) == 1:
            out = out[0]
        if not isinstance(out, PrimExpr):
            raise TileLangError("T.comm_reducer: the combiner must return an expression of its two arguments")
        self.combine = cast(out, dt)


def comm_reducer(combine, identity, name="reduce"):
    return CommReducer(combine, identity)


def _reducers(b):
    return b.__dict__.setdefault("_comm_reducers", [])


@contextmanager
def _scope(b, reducer):
    stack = _reducers(b)
    stack.append(reducer)
    try:
        yield
    finally:
        stack.pop()


@contextmanager
def _no_effect():
    yield


def attr(node, attr_key: str, value=None):
    """`with T.attr(node, key, value):`. The "reduce_scope" of a `T.comm_reducer` gives
    `T.tvm_thread_allreduce` its operator; other keys are hints with no effect here."""
    b = B.require("T.attr")
    if attr_key == "reduce_scope":
        if not isinstance(node, CommReducer):
            raise TileLangError("T.attr(..., \"reduce_scope\", ...) takes a T.comm_reducer(...) as its node")
        return _scope(b, node)
    return _no_effect()


def _thread_var(v, frame):
    if isinstance(v, Var):
        for tv in frame.thread_vars:
            if tv is v:
                return tv
    raise TileLangError(f"T.tvm_thread_allreduce reduces over thread indices (T.get_thread_binding(d) or "
                        f"T.thread_binding(...)), got `{v}`")


def tvm_thread_allreduce(*args, dtype=None):
    """Record the reduction (see the module docstring); returns None, so that
    `T.evaluate(...)` around it is a no-op."""
    from tilelang.language.kernel import _frame
    b = B.require("T.tvm_thread_allreduce")
    frame = _frame()
    stack = _reducers(b)
    if not stack:
        raise TileLangError("T.tvm_thread_allreduce must be inside "
                            "`with T.attr(T.comm_reducer(...), \"reduce_scope\", ...)`")
    red = stack[-1]
    if len(args) < 5:
        raise TileLangError("T.tvm_thread_allreduce(T.uint32(1), value, cond, out[0], *thread_indices) "
                            f"takes at least 5 arguments, got {len(args)}")
    if const_int_value(args[0]) != 1:
        raise TileLangError(f"T.tvm_thread_allreduce reduces one value at a time, got size {args[0]}")
    value, cond, dst = args[1], args[2], args[3]
    if isinstance(value, Buffer) and value.is_var():
        value = value.load()
    if isinstance(dst, Buffer) and dst.is_var():
        dst = dst.load()
    if not isinstance(dst, BufferLoad) or dst.buffer.scope not in ("local", "local.var"):
        raise TileLangError("T.tvm_thread_allreduce writes its result to an element of a local buffer "
                            "(T.alloc_local / T.alloc_var), such as out[0]")
    threads = [_thread_var(v, frame) for v in args[4:]]
    if len({id(v) for v in threads}) != len(threads):
        raise TileLangError("T.tvm_thread_allreduce names a thread index twice")
    cond = as_bool(convert(cond)) if not isinstance(cond, bool) else IntImm(cond, "bool")
    b.emit(S.ThreadAllReduce(red.lhs, red.rhs, red.combine, red.identity, cast(convert(value), red.identity.dtype),
                             cond, dst, threads))
    return None
