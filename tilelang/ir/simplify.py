"""Simplification of scalar expressions: constant folding, identities and a
linear (affine) normal form for sums, so that region extents such as
`(by + 1) * 128 - by * 128` fold to constants."""
from __future__ import annotations

import math

from tilelang.ir import expr as E
from tilelang.ir.visitor import Mutator
from tilelang.ir.dtypes import int32


def _fold(op, a, b, dtype):
    try:
        if op == "+": r = a + b
        elif op == "-": r = a - b
        elif op == "*": r = a * b
        elif op == "/":
            if dtype.is_float:
                r = a / b
            else:
                r = int(a / b) if b != 0 else None  # C truncation
        elif op == "//":
            r = a // b if dtype.is_int or isinstance(a, int) else math.floor(a / b)
        elif op == "%": r = a % b
        elif op == "min": r = min(a, b)
        elif op == "max": r = max(a, b)
        elif op == "<": r = a < b
        elif op == "<=": r = a <= b
        elif op == ">": r = a > b
        elif op == ">=": r = a >= b
        elif op == "==": r = a == b
        elif op == "!=": r = a != b
        elif op == "&&": r = bool(a) and bool(b)
        elif op == "||": r = bool(a) or bool(b)
        elif op == "&": r = a & b
        elif op == "|": r = a | b
        elif op == "^": r = a ^ b
        elif op == "<<": r = a << b
        elif op == ">>": r = a >> b
        else: return None
    except (ZeroDivisionError, TypeError):
        return None
    if r is None:
        return None
    if dtype.is_float:
        return E.FloatImm(r, dtype)
    return E.IntImm(r, dtype)


def _c(e):
    if isinstance(e, (E.IntImm, E.FloatImm)):
        return e.value
    return None


class Simplifier(Mutator):
    """Folds and normalizes every expression of a tree. Inside a `for` loop with constant
    bounds it knows its variable's range (`ranges`), which `_split_div` uses."""

    def __init__(self):
        self.ranges = {}   # id(Var) -> (lo, hi) inclusive: the loops around the node visited

    def visit_For(self, n):
        lo, ext = _c(self.visit(n.min)), _c(self.visit(n.extent))
        known = isinstance(lo, int) and isinstance(ext, int) and ext > 0 and id(n.var) not in self.ranges and \
            (n.step is None or _c(n.step) == 1)
        if known:
            self.ranges[id(n.var)] = (lo, lo + ext - 1)
        try:
            return self.generic_visit(n)
        finally:
            if known:
                del self.ranges[id(n.var)]

    def _decided(self, op, a, b):
        """The value of integer comparison `a op b` (a bool) where the range of a - b over the
        enclosing loops' variables decides it, else None."""
        from tilelang.ir.bounds import bound
        lh = bound(self.visit(E.binop("-", a, b)), self.ranges)
        if lh is None:
            return None
        lo, hi = lh
        table = {"<": (hi < 0, lo >= 0), "<=": (hi <= 0, lo > 0), ">": (lo > 0, hi <= 0),
                 ">=": (lo >= 0, hi < 0), "==": (lo == hi == 0, lo > 0 or hi < 0),
                 "!=": (lo > 0 or hi < 0, lo == hi == 0)}
        true, false = table[op]
        return True if true else False if false else None

    def visit_Var(self, v):
        cv = getattr(v, "const_value", None)
        if cv is not None:
            return E.IntImm(cv, v.dtype)
        return v

    def visit_BinOp(self, n):
        a, b = self.visit(n.a), self.visit(n.b)
        ca, cb = _c(a), _c(b)
        if ca is not None and cb is not None:
            r = _fold(n.op, ca, cb, n.dtype if n.op not in E.COMPARISONS else a.dtype)
            if r is not None:
                if n.op in E.COMPARISONS:
                    return E.IntImm(bool(r.value), n.dtype)
                return r
        op = n.op
        if op in ("<", "<=", ">", ">=", "==", "!=") and a.dtype.is_int and b.dtype.is_int and \
                (ca is None or cb is None):
            # integers whose difference is a constant (`n == n`, `i + 1 > i`) compare now
            d = _c(self.visit(E.binop("-", a, b)))
            if d is not None:
                r = _fold(op, d, 0, a.dtype)
                if r is not None:
                    return E.IntImm(bool(r.value), n.dtype)
            decided = self._decided(op, a, b) if self.ranges else None
            if decided is not None:   # the loops' ranges decide it (a mask no iteration reaches)
                return E.IntImm(decided, n.dtype)
        if n.dtype.is_int:
            if op in ("+", "-") and (_c(b) == 0):
                return a
            if op == "+" and ca == 0:
                return b
            if op == "*":
                if ca == 1: return b
                if cb == 1: return a
                if ca == 0 or cb == 0: return E.IntImm(0, n.dtype)
            if op in ("//", "/") and cb == 1:
                return a
            if op == "%" and cb == 1:
                return E.IntImm(0, n.dtype)
            if op in ("+", "-"):
                lin = linear_form(E.BinOp(op, a, b, n.dtype))
                if lin is not None:
                    return from_linear(lin, n.dtype)
            if op == "//" and cb is not None and cb > 0:
                # (x * c) // c -> x ; (x*c + y)//c when y is a small non-negative const
                lin = linear_form(a)
                if lin is not None:
                    terms, const = lin
                    if all(coef % cb == 0 for _, coef in terms.values()) and 0 <= const < cb and \
                            all(_nonneg(atom) and coef >= 0 for atom, coef in terms.values()):
                        return from_linear(({k: (t, c // cb) for k, t_c in terms.items()
                                             for t, c in [t_c]}, 0), n.dtype)
            if op in ("//", "%") and cb is not None and cb > 0 and self.ranges:
                split = _split_div(a, cb, self.ranges, n.dtype)
                if split is not None:
                    high, c1, low = split   # a == high * c1 + low, 0 <= low < c1, c1 | cb
                    r = cb // c1
                    if op == "//":
                        return self.visit(high if r == 1 else E.BinOp("//", high, E.IntImm(r, n.dtype), n.dtype))
                    rem = E.IntImm(0, n.dtype) if r == 1 else E.BinOp("%", high, E.IntImm(r, n.dtype), n.dtype)
                    return self.visit(E.BinOp("+", E.BinOp("*", rem, E.IntImm(c1, n.dtype), n.dtype), low, n.dtype))
            if op == "%" and cb is not None and cb > 0:
                lin = linear_form(a)
                if lin is not None:
                    terms, const = lin
                    if all(coef % cb == 0 for _, coef in terms.values()) and \
                            all(_nonneg(atom) and coef >= 0 for atom, coef in terms.values()):
                        return E.IntImm(const % cb, n.dtype)
        if n.dtype.is_bool and op == "&&":
            if ca is True or ca == 1: return b
            if cb is True or cb == 1: return a
            if ca is False or cb is False: return E.IntImm(False, n.dtype)
        if n.dtype.is_bool and op == "||":
            if ca is False: return b
            if cb is False: return a
            if ca is True or cb is True: return E.IntImm(True, n.dtype)
        if a is n.a and b is n.b:
            return n
        out = E.BinOp(op, a, b, n.dtype)
        out.span = n.span
        return out

    def visit_Not(self, n):
        a = self.visit(n.a)
        if isinstance(a, E.IntImm):
            return E.IntImm(not a.value, n.dtype)
        return n if a is n.a else E.Not(a)

    def visit_Cast(self, n):
        v = self.visit(n.value)
        if isinstance(v, E.IntImm) and n.dtype.is_int:
            return E.IntImm(v.value, n.dtype)
        if isinstance(v, (E.IntImm, E.FloatImm)) and n.dtype.is_float and n.dtype.bits >= 32:
            return E.FloatImm(float(v.value), n.dtype)
        if isinstance(v, E.FloatImm) and n.dtype.is_int:
            return E.IntImm(int(v.value), n.dtype)
        if v.dtype is n.dtype:
            return v
        return n if v is n.value else E.Cast(n.dtype, v)

    def visit_Select(self, n):
        c = self.visit(n.cond)
        if isinstance(c, E.IntImm):
            return self.visit(n.t) if c.value else self.visit(n.f)
        return self.generic_visit(n)


def _split_div(a, cb, ranges, dtype):
    """(high, c1, low) with a == high * c1 + low, c1 > 1 a divisor of cb and
    0 <= low < c1 for every value of the loop variables in `ranges`, or None; then
    a // cb == high // (cb / c1) and a % cb == high % (cb / c1) * c1 + low (floor
    division, any integer high). `(k * 64 + j) // 384` with j in [0, 64) is k // 6: an
    im2col tile's filter tap, the same for a whole row of its columns."""
    from tilelang.ir.bounds import bound
    lin = linear_form(a)
    if lin is None or not lin[0]:
        return None
    terms, const = lin
    for c1 in sorted({math.gcd(cb, abs(c)) for _, c in terms.values()}, reverse=True):
        if c1 <= 1:
            break
        high = {k: (t, c // c1) for k, (t, c) in terms.items() if c % c1 == 0}
        low = ({k: (t, c) for k, (t, c) in terms.items() if c % c1}, const)
        lo_hi = bound(from_linear(low, dtype), ranges) if low[0] else (const, const)
        if high and lo_hi is not None and 0 <= lo_hi[0] and lo_hi[1] < c1:
            return from_linear((high, 0), dtype), c1, from_linear(low, dtype)
    return None


def _nonneg(atom):
    # loop variables and block indices are non-negative in our IR by construction
    return isinstance(atom, E.Var) and atom.dtype.is_int and getattr(atom, "nonneg", True)


def structural_key(e):
    """A structural key: variables and buffers by identity, never by their names (two
    `T.alloc_var` scalars of one scheduler print alike but are different atoms)."""
    if isinstance(e, E.Var):
        return ("v", id(e))
    if isinstance(e, (E.IntImm, E.FloatImm, E.StringImm)):
        return (type(e).__name__, e.value, str(e.dtype))
    if isinstance(e, E.BinOp):
        return ("op", e.op, structural_key(e.a), structural_key(e.b), str(e.dtype))
    if isinstance(e, E.Not):
        return ("not", structural_key(e.a))
    if isinstance(e, E.Cast):
        return ("cast", str(e.dtype), structural_key(e.value))
    if isinstance(e, E.Select):
        return ("select", structural_key(e.cond), structural_key(e.t), structural_key(e.f))
    if isinstance(e, E.BufferLoad):
        return ("load", id(e.buffer), tuple(structural_key(i) for i in e.indices))
    if isinstance(e, E.Call):
        return ("call", e.name, str(e.dtype), tuple(structural_key(a) for a in e.args))
    if isinstance(e, (str, int, float, bool)) or e is None:
        return ("py", e)
    return ("obj", id(e))   # a buffer or another object passed to a call


def linear_form(e):
    """e as ({key: (atom, coef)}, const) when it is a sum of integer atoms times
    constants, else None."""
    if isinstance(e, E.IntImm):
        return {}, e.value
    if isinstance(e, E.BinOp) and e.dtype.is_int:
        if e.op in ("+", "-"):
            la, lb = linear_form(e.a), linear_form(e.b)
            if la is None or lb is None:
                return None
            sign = 1 if e.op == "+" else -1
            terms = dict(la[0])
            for k, (atom, c) in lb[0].items():
                if k in terms:
                    terms[k] = (terms[k][0], terms[k][1] + sign * c)
                else:
                    terms[k] = (atom, sign * c)
            return {k: v for k, v in terms.items() if v[1] != 0}, la[1] + sign * lb[1]
        if e.op == "*":
            ca, cb = _c(e.a), _c(e.b)
            if cb is not None:
                la = linear_form(e.a)
                if la is None:
                    return None
                return {k: (a, c * cb) for k, (a, c) in la[0].items() if c * cb != 0}, la[1] * cb
            if ca is not None:
                lb = linear_form(e.b)
                if lb is None:
                    return None
                return {k: (a, c * ca) for k, (a, c) in lb[0].items() if c * ca != 0}, lb[1] * ca
    if e.dtype.is_int:
        return {structural_key(e): (e, 1)}, 0
    return None


def from_linear(lin, dtype=int32):
    terms, const = lin
    out = None
    for atom, coef in terms.values():
        if atom.dtype is not dtype:
            atom = E.Cast(dtype, atom) if not isinstance(atom, E.IntImm) else E.IntImm(atom.value, dtype)
        t = atom if coef == 1 else E.BinOp("*", atom, E.IntImm(abs(coef), dtype), dtype) if coef != -1 else atom
        if out is None:
            out = t if coef > 0 else E.BinOp("-", E.IntImm(0, dtype), t, dtype)
        else:
            out = E.BinOp("+" if coef > 0 else "-", out, t, dtype)
    if out is None:
        return E.IntImm(const, dtype)
    if const > 0:
        out = E.BinOp("+", out, E.IntImm(const, dtype), dtype)
    elif const < 0:
        out = E.BinOp("-", out, E.IntImm(-const, dtype), dtype)
    return out


_simplifier = Simplifier()


def simplify(e):
    if isinstance(e, (int, float)):
        return E.const(e)
    return _simplifier.visit(e)


def prove(cond) -> bool:
    """True when `cond` simplifies to a true constant."""
    c = simplify(E.convert(cond))
    return isinstance(c, E.IntImm) and bool(c.value)
