"""Scalar IR expressions -> C/C++ source: what every C-printing backend shares.

`CExprPrinter` walks an expression and prints the forms all C dialects agree on
(variables, booleans, int32 literals, strings, `!`, `?:`, binary operators, narrow
integer wrap-around, buffer element pointers, extern calls, vector shuffles). The
spellings that differ are methods a backend overrides: `ctype` (its C type of each
dtype), literals, casts, min/max, floor division, and `intrinsic` (its math and
device calls). Printing never emits statements: a backend's code generator owns
those and gives the printer `buffer_access(load)` for a buffer element's lvalue."""
from __future__ import annotations

from tilelang.ir import expr as E


class CExprPrinter:
    """Call the printer on an expression to get its C source.

    `names`: a `CNames` (names.py) holding the C name of every variable in scope;
    `buffer_access(load)`: the C lvalue of the element a BufferLoad reads."""

    target_name = "C"                 # in error messages: "<target> codegen: ..."
    target_phrase = "C"               # ... and "not lowered for <target phrase>"
    error = NotImplementedError       # raised for expressions the backend cannot print
    narrow_wrap_ops = ("+", "-", "*", "<<")   # int ops whose result C widens to int

    def __init__(self, names, buffer_access):
        self.names = names
        self.buffer_access = buffer_access

    # the backend's spellings --------------------------------------------------
    def ctype(self, dt) -> str:
        raise NotImplementedError

    def int_literal(self, value, dt) -> str:
        """A literal of integer dtype `dt` other than bool and int32."""
        return f"(({self.ctype(dt)}){value})"

    def suffixed_int_literal(self, value, dt) -> str:
        """int_literal for host-style C++ (the CPU and HIP backends): a 64-bit suffix on
        every literal, INT64_MIN spelled by name (its literal would overflow)."""
        if dt.name == "int64":
            return f"(int64_t){value}LL" if value != -2**63 else "INT64_MIN"
        return f"(({self.ctype(dt)}){value}LL)" if dt.kind == "int" else f"(({self.ctype(dt)}){value}ULL)"

    def float_literal(self, value, dt) -> str:
        raise NotImplementedError

    def cast(self, src_dt, dst_dt, s) -> str:
        raise NotImplementedError

    def min_max(self, op, e, a, b) -> str:
        return f"tl::{op}({a}, {b})"

    def floor_div_mod(self, op, e, a, b) -> str:
        """`a // b` or `a % b` with Python (floor) semantics."""
        raise NotImplementedError

    def arith(self, op, dt, a, b) -> str:
        """Any other binary operator on operands of dtype `dt`."""
        return f"({a} {op} {b})"

    def lane_ctype(self, dt) -> str:
        """The constructor of one lane of a vector (a Shuffle picking one lane)."""
        return self.ctype(dt)

    def intrinsic(self, call):
        """The backend's spelling of `call` (math, atomics, device functions), or None
        for the shared forms: buffer element pointers, dp4a, and a call by name."""
        return None

    # printing -------------------------------------------------------------------
    def __call__(self, e) -> str:
        if isinstance(e, (bool, int)):
            return str(int(e))
        if isinstance(e, float):
            from tilelang.ir.dtypes import DataType
            return self.float_literal(e, DataType("float32"))
        fn = getattr(self, "p_" + type(e).__name__, None)
        if fn is None and isinstance(e, E.Call):   # subclasses of calls (E.Shuffle)
            fn = self.p_Call
        if fn is None:
            raise self.error(f"{self.target_name} codegen: unsupported expression {type(e).__name__}")
        return fn(e)

    def p_Var(self, v):
        n = self.names.get(id(v))
        if n is None:
            raise self.error(f"{self.target_name} codegen: variable `{v.name}` is not bound here")
        return n

    def p_IntImm(self, e):
        if e.dtype.is_bool:
            return "true" if e.value else "false"
        if e.dtype.name == "int32":
            return str(e.value) if e.value != -2 ** 31 else "(-2147483647 - 1)"
        return self.int_literal(e.value, e.dtype)

    def p_FloatImm(self, e):
        return self.float_literal(e.value, e.dtype)

    def p_StringImm(self, e):
        return '"' + e.value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    def p_BinOp(self, e):
        a, b = self(e.a), self(e.b)
        op, dt = e.op, e.a.dtype
        if op in ("min", "max"):
            return self.min_max(op, e, a, b)
        if op in ("//", "%"):
            return self.floor_div_mod(op, e, a, b)
        if op in self.narrow_wrap_ops and dt.is_int and dt.bits < 32:
            # C computes narrow ints in int: wrap to the dtype's width as the IR means
            return f"(({self.ctype(dt)})({a} {op} {b}))"
        return self.arith(op, dt, a, b)

    def p_Not(self, e):
        return f"(!{self(e.a)})"

    def p_Cast(self, e):
        return self.cast(e.value.dtype, e.dtype, self(e.value))

    def p_Select(self, e):
        # C's ?: evaluates only the taken side: out-of-bounds loads stay unevaluated
        return f"({self(e.cond)} ? {self(e.t)} : {self(e.f)})"

    def p_BufferLoad(self, e):
        return self.buffer_access(e)

    def p_Call(self, e):
        name = e.name
        if name == "tl.cast_rounded":   # no C target has these rounding modifiers
            from tilelang.ir.rounded_cast import reject
            raise reject(e, self.target_phrase)
        if name == E.SHUFFLE:
            from tilelang.backend.c.lanes import shuffle_source
            return shuffle_source(e, self, self.ctype, self.lane_ctype)
        out = self.intrinsic(e)
        if out is not None:
            return out
        args = [self(a) for a in e.args]
        if name == E.ACCESS_PTR:
            return f"(&{args[0]})"
        if name == "tl.dp4a":
            return f"tl::dp4a({', '.join(args)})"
        # T.call_extern and unknown intrinsics: call by name
        return f"{name}({', '.join(args)})"
