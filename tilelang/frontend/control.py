"""Runtime support for rewritten kernel bodies (`__tl__` in their namespace):
decides at trace time whether each control-flow construct is Python or IR."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir import expr as E
from tilelang.ir.expr import PrimExpr, IntImm, FloatImm, as_bool, select, binop, Not, convert
from tilelang.ir.buffer import Buffer
from tilelang.ir.errors import TileLangError, UnsupportedConstructError
from tilelang.arith.simplify import simplify

UNSET = object()


def _as_runtime(c):
    """The condition as an IR expression when it depends on runtime values, else None."""
    if isinstance(c, Buffer) and c.is_var():
        c = c.load()
    if isinstance(c, PrimExpr):
        s = simplify(c)
        if isinstance(s, (IntImm, FloatImm)):
            return None
        return as_bool(s)
    return None


class Helpers:
    UNSET = UNSET

    # loops ------------------------------------------------------------------
    @staticmethod
    def for_iter(it):
        from tilelang.language.loops import LoopFrame, serial
        from tilelang.language.kernel import is_launch_index
        if is_launch_index(it):  # `for tx in T.thread_binding(...)`: each thread once
            return iter((it,))
        if isinstance(it, range):
            it = serial(it.start, it.stop, it.step) if it.step != 1 else serial(it.start, it.stop)
        if isinstance(it, LoopFrame):
            return it.iterate()
        from tilelang.language.kernel import LaunchAxis
        if isinstance(it, LaunchAxis):
            return it.iterate()
        return _py_iter(it)

    @staticmethod
    def close_iter(gen):
        close = getattr(gen, "close", None)
        if close is not None:
            close()

    @staticmethod
    def loop_break():
        b = B.current()
        if b is not None and b.loop_kinds and b.loop_kinds[-1] == "ir":
            b.emit(S.Break())
            return False
        return True

    @staticmethod
    def loop_continue():
        b = B.current()
        if b is not None and b.loop_kinds and b.loop_kinds[-1] == "ir":
            b.emit(S.Continue())
            return False
        return True

    @staticmethod
    def expr_stmt(value):
        """An expression statement: a call (`T.call_extern(...)`) is evaluated for its
        effects, as `T.evaluate` would; other values are dropped, as in Python."""
        from tilelang.ir.expr import Call
        if isinstance(value, Call):
            b = B.current()
            if b is not None:
                b.emit(S.Evaluate(value))
        return value

    # branches -------------------------------------------------------------------
    @staticmethod
    def cond(c):
        return c

    @staticmethod
    def is_runtime(c):
        return _as_runtime(c) is not None

    @staticmethod
    def py_bool(c):
        if isinstance(c, PrimExpr):
            return bool(simplify(c).value)
        return c

    @staticmethod
    def then_(c):
        return _Branch(_as_runtime(c))

    @staticmethod
    def else_():
        return _Else()

    @staticmethod
    def while_(test):
        return _While(test)

    @staticmethod
    def while_iter(test):
        w = _While(test)
        w.__enter__()
        completed = False
        try:
            yield None
            completed = True
        finally:
            w.__exit__(None if completed else GeneratorExit, None, None)

    @staticmethod
    def range_(*args):
        if any(isinstance(a, (PrimExpr, Buffer)) for a in args):
            from tilelang.language.loops import serial
            args = [a.load() if isinstance(a, Buffer) and a.is_var() else a for a in args]
            return serial(*args)
        return range(*args)

    @staticmethod
    def ifexp(c, t, f):
        rc = _as_runtime(c)
        if rc is None:
            return t() if Helpers.py_bool(c) else f()
        return select(rc, t(), f())

    @staticmethod
    def and_(a, rest):
        ra = _as_runtime(a)
        if ra is None:
            return rest() if Helpers.py_bool(a) else a
        b = rest()
        rb = _as_runtime(b)
        if rb is None:
            return ra if Helpers.py_bool(b) else False
        return binop("&&", ra, rb)

    @staticmethod
    def or_(a, rest):
        ra = _as_runtime(a)
        if ra is None:
            return a if Helpers.py_bool(a) else rest()
        b = rest()
        rb = _as_runtime(b)
        if rb is None:
            return True if Helpers.py_bool(b) else ra
        return binop("||", ra, rb)

    @staticmethod
    def not_(a):
        ra = _as_runtime(a)
        if ra is None:
            return not Helpers.py_bool(a)
        return Not(ra)

    @staticmethod
    def assert_(c, msg):
        rc = _as_runtime(c)
        if rc is None:
            if not Helpers.py_bool(c):
                raise TileLangError(f"assertion failed{': ' + str(msg) if msg else ''}")
            return
        B.require("assert").emit(S.Assert(rc, str(msg) if msg is not None else "assertion failed"))

    # assignments ------------------------------------------------------------------
    @staticmethod
    def lookup(ns, name):
        return ns.get(name, UNSET)

    @staticmethod
    def snapshot(values):
        """The right-hand side of a tuple assignment, with every value that reads a buffer
        copied into a fresh scalar first (IR loads read memory when the store runs, so
        `a[0], a[1] = a[1], a[0]` would otherwise see its own first store)."""
        b = B.current()
        if b is None:
            return values
        from tilelang.ir.expr import PrimExpr, BufferLoad
        from tilelang.ir.visitor import walk
        out = []
        for v in values:
            if isinstance(v, Buffer) and v.is_var():
                v = v.load()
            loads = []
            if isinstance(v, PrimExpr):
                walk(v, lambda n: loads.append(n) if isinstance(n, BufferLoad) else None)
            if loads:
                tmp = Buffer("tuple_tmp", (1,), v.dtype, "local.var", init=v)
                b.emit(S.DeclBuffer(tmp))
                v = tmp.load()
            out.append(v)
        return type(values)(out)

    @staticmethod
    def assign(value, old):
        if isinstance(old, Buffer) and old.is_var() and not isinstance(value, Buffer) and \
                B.current() is not None:
            old[0] = value
            return old
        b = B.current()
        if b is not None and id(old) in b.ref_loads and b.ref_loads[id(old)] is old:   # a T.Ref parameter
            old.buffer[tuple(old.indices)] = value
            return old
        b = B.current()
        if isinstance(value, PrimExpr) and b is not None:
            from tilelang.transform.broadcast_block_effects import has_effect
            if has_effect(value) or (b.kernel_depth and not b.parallel_depth and _reads_memory(value)):
                # The value is taken here, once: `old = T.atomic_add(..., return_prev=True)` must not
                # run the atomic again at each use, and `v = S[tx + 1]` before a barrier (or a store
                # to S) must not read S again after it. A kernel variable holds it. (Inside
                # T.Parallel the name stays an alias: each iteration is one element's work.)
                name = (B.source_names("assign") or ["value"])[0]
                tmp = Buffer(name, (1,), value.dtype, "local.var")
                b.emit(S.DeclBuffer(tmp))
                b.emit(S.BufferStore(tmp, value, [IntImm(0)]))
                return tmp.load()
            if isinstance(value, E.BufferLoad) and b.parallel_depth:
                # an alias of one element: its name is kept for the code generator
                # (a vector of such elements is declared under it: ops/vector_copy.py)
                value.name_hint = (B.source_names("assign") or ["value"])[0]
        from tilelang.ir.buffer import BufferRegion
        if isinstance(value, BufferRegion) and b is not None and b.kernel_depth:
            # `v = A[0, 0:4]`: an alias of the region; a vector copy from it declares
            # its vector under this name (ops/vector_copy.py)
            value.name_hint = (B.source_names("assign") or ["value"])[0]
        return value

    @staticmethod
    def annotate(name, old, annotation, value, has_value):
        from tilelang.language.proxy import annotate_binding
        return annotate_binding(name, old, annotation, value, has_value)

    @staticmethod
    def ret(value):
        b = B.current()
        if b is not None and b.macro_depth:
            # a macro returns values: a variable (T.alloc_var) as its value, read where the
            # caller uses it (as published); the kernel's outputs are the kernel body's return
            from tilelang.ir.buffer import Buffer
            unwrap = lambda v: v.load() if isinstance(v, Buffer) and v.is_var() else v   # noqa: E731
            return tuple(unwrap(v) for v in value) if isinstance(value, tuple) else unwrap(value)
        if b is not None:
            b.outputs = value
        return value

    @staticmethod
    def unpack_with(cm, n):
        """`with T.Kernel(n) as (bx,):` -- a frame that enters as one value, unpacked as a
        1-tuple."""
        return _UnpackedFrame(cm, n)

    @staticmethod
    def unsupported(what):
        raise UnsupportedConstructError(f"{what} is not supported inside a kernel body",
                                        hint="move this Python code outside the @T.prim_func / "
                                             "@tilelang.jit body")


class _UnpackedFrame:
    def __init__(self, cm, n):
        self.cm, self.n = cm, n

    def __enter__(self):
        v = self.cm.__enter__()
        return (v,) if self.n == 1 and not isinstance(v, (tuple, list)) else v

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc)


def _py_iter(it):
    b = B.current()
    if b is not None:
        b.loop_kinds.append("py")
    try:
        for x in it:
            yield x
    finally:
        if b is not None:
            b.loop_kinds.pop()


class _Branch:
    def __init__(self, cond):
        self.cond = cond

    def __enter__(self):
        B.require("if").push()

    def __exit__(self, et, ev, tb):
        b = B.current()
        body = b.pop()
        if et is None:
            b.emit(S.IfThenElse(self.cond, body, None))
        return False


class _Else:
    def __enter__(self):
        B.require("else").push()

    def __exit__(self, et, ev, tb):
        b = B.current()
        body = b.pop()
        if et is None:
            last = b.stack[-1][-1]
            assert isinstance(last, S.IfThenElse)
            last.else_body = body
        return False


class _While:
    def __init__(self, test):
        self.test = test

    def __enter__(self):
        b = B.require("while")
        self.cond = _as_runtime(self.test())
        b.push()
        b.loop_kinds.append("ir")

    def __exit__(self, et, ev, tb):
        b = B.current()
        b.loop_kinds.pop()
        body = b.pop()
        if et is None:
            b.emit(S.While(self.cond, body))
        return False


HELPERS = Helpers()


def _reads_memory(e) -> bool:
    """Whether evaluating `e` loads from a buffer (so its value depends on when it runs)."""
    from tilelang.ir.visitor import walk
    found = []
    walk(e, lambda n: found.append(n) if isinstance(n, E.BufferLoad) else None)
    return bool(found)
