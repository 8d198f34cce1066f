"""Random valid program descriptions from a seed: `generate(seed)` is a pure function of
the seed (Python's `random.Random`), `program_seed(seed, i)` names the i-th program of a
run so that any one can be regenerated alone. Expression trees track a static bound on
their magnitude so that no value overflows its dtype (float16 stays below 512, integers
below 2**20) and `exp` only sees small arguments."""
from __future__ import annotations

import math
import random

from tilelang.testing.fuzz import spec
from tilelang.testing.fuzz.known import KNOWN_FAILURES, known_failure  # noqa: F401 - re-exported
from tilelang.testing.fuzz.spec import (AtomicScalar, AtomicTile, Binary, Branch, Cast, Const, CopyChain,
                                        Elementwise, Gemm, GemmChain, Leaf, LoopReduce, Param, Reduce, ReduceOp, Round,
                                        Select, Staging, Threads, TileChain, Unary)

# inputs are uniform in [-2, 2] (floats) and [-50, 50] (int32); see reference.inputs
LEAF_BOUND = {"float32": 2.0, "float16": 2.0, "bfloat16": 2.0, "int32": 50}
LIMIT = {"float32": 1e5, "float16": 512.0, "bfloat16": 1e4, "int32": 2 ** 20}
FLOAT_CONSTS = (0.5, 1.0, 1.5, 2.0, -1.0, 0.25, 3.0, -0.75)
INT_CONSTS = (1, 2, 3, 5, 7, -4)
DIVISORS = (2, 3, 4, 7, 16)

FAMILY_WEIGHTS = {"Elementwise": 3.0, "CopyChain": 1.5, "Reduce": 2.0, "Gemm": 2.5, "Branch": 1.5,
                  "Threads": 1.5, "AtomicScalar": 1.0, "AtomicTile": 1.0, "TileChain": 2.0, "LoopReduce": 1.5,
                  "GemmChain": 1.5, "Staging": 1.5}


def program_seed(seed: int, index: int) -> int:
    """The seed of the index-th program of a run started with `seed`."""
    return (seed * 1_000_003 + index * 7919) % (2 ** 31)


def generate(seed: int, families=None, include_known=False):
    """One random valid program description (redrawn from the same random stream while
    it hits a KNOWN_FAILURES construct, unless include_known)."""
    rng = random.Random(seed)
    names = list(families or FAMILY_WEIGHTS)
    while True:
        fam = rng.choices(names, weights=[FAMILY_WEIGHTS[n] for n in names])[0]
        prog = spec.validate(GENERATORS[fam](rng, seed))
        if include_known or known_failure(prog) is None:
            return prog


def generate_many(seed: int, count: int, families=None, include_known=False):
    return [generate(program_seed(seed, i), families, include_known) for i in range(count)]


# ------------------------------------------------------------------ expressions

def _dtype(rng, ints=True):
    return rng.choices(spec.DTYPES, weights=(35, 30, 20, 15 if ints else 0))[0]


class ExprGen:
    """Random well-typed expression trees over the given input dtypes."""

    def __init__(self, rng, inputs, allow_param=False, limit=None):
        self.rng, self.inputs, self.allow_param = rng, inputs, allow_param
        self.limit = dict(LIMIT, **(limit or {}))

    def leaf(self, dtype):
        rng = self.rng
        if LEAF_BOUND[dtype] > self.limit[dtype]:
            return self.const(dtype)
        same = [k for k, d in enumerate(self.inputs) if d == dtype]
        r = rng.random()
        if same and r < 0.7:
            return Leaf(rng.choice(same)), LEAF_BOUND[dtype]
        if self.allow_param and dtype == "float32" and r < 0.8:
            return Param(), 2.0
        if r < 0.9:
            k = rng.randrange(len(self.inputs))
            src = self.inputs[k]
            if src == dtype:
                return Leaf(k), LEAF_BOUND[dtype]
            b = LEAF_BOUND[src]
            if b <= self.limit[dtype]:
                return Cast(dtype, Leaf(k)), b
        return self.const(dtype)

    def const(self, dtype):
        v = self.rng.choice(INT_CONSTS if dtype == "int32" else FLOAT_CONSTS)
        return Const(v, dtype), abs(v)

    def expr(self, dtype, depth):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.2:
            return self.leaf(dtype)
        ops = ["add", "sub", "mul", "max", "min", "neg", "abs", "cast", "select"]
        if dtype == "int32":
            ops += ["floordiv", "mod"]
        elif dtype != "bfloat16":
            ops += ["exp"]
        op = rng.choice(ops)
        if op in ("add", "sub", "mul", "max", "min"):
            (a, ba), (b, bb) = self.expr(dtype, depth - 1), self.expr(dtype, depth - 1)
            if op == "mul" and ba * bb > self.limit[dtype]:
                op = "add"
            bound = {"mul": ba * bb, "max": max(ba, bb), "min": max(ba, bb)}.get(op, ba + bb)
            if bound > self.limit[dtype]:
                return self.leaf(dtype)
            return Binary(op, a, b), bound
        if op in ("neg", "abs"):
            a, ba = self.expr(dtype, depth - 1)
            return Unary(op, a), ba
        if op == "exp":
            a, ba = self.expr(dtype, depth - 1)
            if ba > 3.0 or math.exp(ba) > self.limit[dtype]:
                return Unary("abs", a), ba
            return Unary("exp", a), math.exp(ba)
        if op in ("floordiv", "mod"):
            a, ba = self.expr(dtype, depth - 1)
            c = rng.choice(DIVISORS)
            return Binary(op, a, Const(c, "int32")), (ba // c + 1 if op == "floordiv" else c)
        if op == "cast":
            src = _dtype(rng)
            if src == dtype:
                return self.expr(dtype, depth - 1)
            if dtype == "int32":    # float -> int only from exact values
                floats = [k for k, d in enumerate(self.inputs) if d != "int32"]
                if not floats:
                    return self.leaf(dtype)
                return Cast("int32", Leaf(rng.choice(floats))), LEAF_BOUND["float32"]
            a, ba = self.expr(src, depth - 1)
            if ba > self.limit[dtype]:
                return self.leaf(dtype)
            return Cast(dtype, a), ba
        # select on exact values
        k = rng.randrange(len(self.inputs))
        cd = self.inputs[k]
        other = [j for j, d in enumerate(self.inputs) if d == cd and j != k]
        b = Leaf(rng.choice(other)) if other and rng.random() < 0.5 else self.const(cd)[0]
        (t, bt), (o, bo) = self.expr(dtype, depth - 1), self.expr(dtype, depth - 1)
        return Select(rng.choice(("<", ">", "<=", ">=")), Leaf(k), b, t, o), max(bt, bo)


def _used_inputs_only(inputs, exprs):
    """Drop inputs no expression reads, renumbering the leaves."""
    used = sorted(set(k for e in exprs for k in spec.leaves(e)))
    if not used:
        return None
    remap = {k: i for i, k in enumerate(used)}
    return tuple(inputs[k] for k in used), [renumber(e, remap) for e in exprs]


def renumber(e, remap):
    if isinstance(e, Leaf):
        return Leaf(remap[e.index])
    if isinstance(e, Cast):
        return Cast(e.dtype, renumber(e.arg, remap))
    if isinstance(e, Unary):
        return Unary(e.op, renumber(e.arg, remap))
    if isinstance(e, Binary):
        return Binary(e.op, renumber(e.lhs, remap), renumber(e.rhs, remap))
    if isinstance(e, Select):
        return Select(e.cmp, *(renumber(x, remap) for x in (e.a, e.b, e.then, e.other)))
    return e


# ------------------------------------------------------------------ families

def _tile(rng, choices=(8, 16, 32, 64, 128), max_elems=8192):
    while True:
        a, b = rng.choice(choices), rng.choice(choices)
        if a * b <= max_elems:
            return a, b


def _extent(rng, block, ragged=0.6, most=3):
    if rng.random() < ragged:
        return rng.randint(1, most * block)
    return block * rng.randint(1, most)


def _dyn(rng, block, p=0.25, align=1):
    if rng.random() >= p:
        return ()
    return tuple(sorted({align * rng.randint(1, 3 * block // align) for _ in range(rng.randint(1, 2))}))


def gen_elementwise(rng, seed):
    for _ in range(100):
        inputs = tuple(_dtype(rng) for _ in range(rng.randint(1, 3)))
        out = _dtype(rng)
        edt = "int32" if out == "int32" else (_dtype(rng) if rng.random() < 0.3 else out)
        expr, _ = ExprGen(rng, inputs).expr(edt, rng.randint(1, 4))
        used = _used_inputs_only(inputs, [expr])
        if used:
            break
    inputs, (expr,) = used
    bm, bn = _tile(rng)
    guard = rng.choices(("if", "if_then_else", "copy"), weights=(4, 2, 4))[0]
    dyn = () if guard == "if_then_else" else _dyn(rng, bm)
    return Elementwise(seed, _extent(rng, bm) if not dyn else dyn[0], _extent(rng, bn), bm, bn,
                       rng.choice(spec.THREADS), inputs, out, expr, guard,
                       tuple(rng.choice(("shared", "fragment")) for _ in inputs) if guard == "copy" else (),
                       rng.choice(("start", "slice")), dyn)


def gen_copy(rng, seed):
    bm, bn = _tile(rng)
    h, w = rng.randint(1, bm), rng.randint(1, bn)
    if rng.random() < 0.4:
        h, w = bm, bn
    if rng.random() < 0.15:
        dts = ("int32",) * 4
    else:
        dts = tuple(rng.choice(spec.FLOATS) for _ in range(4))
    dyn = _dyn(rng, bm)
    return CopyChain(seed, dyn[0] if dyn else _extent(rng, bm), _extent(rng, bn), bm, bn, rng.choice(spec.THREADS),
                     dts[0], rng.choice(("shared", "fragment")), dts[1], rng.choice(("shared", "fragment")), dts[2],
                     dts[3], rng.randint(0, bm - h), rng.randint(0, bn - w), h, w,
                     rng.choice(("start", "slice")), rng.choice(("start", "slice")), dyn)


def gen_reduce(rng, seed):
    R, C = _tile(rng, (4, 8, 16, 32, 64, 128))
    ops = tuple(ReduceOp(rng.choice(spec.REDUCE_KINDS), rng.choice((0, 1, 1, -1)), rng.random() < 0.5)
                for _ in range(rng.randint(1, 3)))
    dyn = _dyn(rng, R)
    return Reduce(seed, dyn[0] if dyn else _extent(rng, R), _extent(rng, C), R, C, rng.choice(spec.THREADS),
                  rng.choices(spec.DTYPES, weights=(40, 25, 15, 20))[0], rng.choice(("shared", "fragment")), ops, dyn)


def gen_gemm(rng, seed):
    bm, bn = rng.choice((64, 128)), rng.choice((64, 128))
    bk = rng.choices((32, 16, 64), weights=(6, 1, 1))[0]
    in_dtype = "bfloat16" if rng.random() < 0.15 else "float16"
    accum = "float16" if in_dtype == "float16" and rng.random() < 0.4 else "float32"
    out = rng.choice((accum, "float32", "float16"))
    dims = [16 * rng.randint(1, 16) if rng.random() < 0.5 else b * rng.randint(1, 2) for b in (bm, bn, bk)]
    dyn = _dyn(rng, bm, p=0.15, align=16)
    return Gemm(seed, dyn[0] if dyn else dims[0], dims[1], max(16, dims[2]), bm, bn, bk, rng.choice((128, 256)),
                rng.random() < 0.5, rng.random() < 0.5, in_dtype, accum, out, rng.randint(0, 3),
                "serial" if rng.random() < 0.15 else "pipelined", rng.choice(("none", "none", "relu", "scale")),
                rng.random() < 0.3, dyn, rng.choice(("",) * 5 + spec.REDUCE_KINDS), rng.random() < 0.2,
                rng.choice(("Square", "Square", "FullRow", "FullCol")))


def _pre(rng, dtype, out, limit):
    """An expression of one tile element (Leaf 0 of `dtype`) computing `out`, |value| <= limit."""
    for _ in range(100):
        e, _ = ExprGen(rng, (dtype,), limit={out: limit, dtype: max(limit, LEAF_BOUND[dtype])}).expr(
            out, rng.randint(0, 2))
        if list(spec.leaves(e)):
            return e
    return Cast(out, Leaf(0)) if out != dtype else Leaf(0)


def gen_tile_chain(rng, seed):
    bm, bn = _tile(rng, (4, 8, 16, 32, 64, 128))
    dtype = _dtype(rng)
    work = "int32" if dtype == "int32" and rng.random() < 0.7 else rng.choice(spec.FLOATS)
    if work == "int32" and dtype != "int32":
        work = "float32"
    out = work if work == "int32" else rng.choice(spec.FLOATS)
    limit = {"float16": 4.0, "bfloat16": 8.0, "float32": 100.0, "int32": 1000}[work]
    return TileChain(seed, _extent(rng, bm), _extent(rng, bn), bm, bn, rng.choice(spec.THREADS), dtype,
                     rng.choice(("shared", "fragment")), work, _pre(rng, dtype, work, limit),
                     rng.choice(spec.REDUCE_KINDS), rng.choice((0, 1, 1, -1)),
                     rng.choice(("add", "sub", "mul", "max", "min")), out)


def gen_loop_reduce(rng, seed):
    bm, bk = _tile(rng, (4, 8, 16, 32, 64, 128))
    dtype = _dtype(rng)
    acc = rng.choices(spec.DTYPES, weights=(60, 15, 10, 15))[0]
    if acc == "int32" and dtype != "int32":
        acc = "float32"
    limit = {"float16": 16.0, "bfloat16": 16.0, "float32": 100.0, "int32": 1000}[acc]
    dyn = _dyn(rng, bm)
    return LoopReduce(seed, dyn[0] if dyn else _extent(rng, bm), rng.randint(1, 4 * bk), bm, bk,
                      rng.choice(spec.THREADS), dtype, rng.choice(("shared", "fragment")),
                      _pre(rng, dtype, acc, limit), acc, rng.choice(("add", "max")), rng.choice(spec.REDUCE_KINDS),
                      rng.randint(0, 3), "serial" if rng.random() < 0.2 else "pipelined", dyn)


def gen_branch(rng, seed):
    for _ in range(100):
        inputs = tuple(_dtype(rng) for _ in range(rng.randint(1, 2)))
        out = _dtype(rng)
        edt = "int32" if out == "int32" else out
        gen = ExprGen(rng, inputs, allow_param=True)
        then, _ = gen.expr(edt, rng.randint(0, 2))
        other, _ = gen.expr(edt, rng.randint(0, 2))
        used = _used_inputs_only(inputs, [then, other])
        if used:
            break
    inputs, (then, other) = used
    bm, bn = _tile(rng, (8, 16, 32, 64))
    M, N = _extent(rng, bm), _extent(rng, bn)
    cond = rng.choice(("elem", "index", "flag", "scalar"))
    k = rng.randrange(len(inputs))
    thr = rng.choice((-10, 0, 10)) if inputs[k] == "int32" else rng.choice((-0.5, 0.0, 0.5, 1.0))
    s = rng.randint(0, M + N) if cond == "index" else rng.randint(-3, 3)
    if cond in ("scalar", "flag"):
        thr = 0
    return Branch(seed, M, N, bm, bn, rng.choice(spec.THREADS), inputs, out, cond,
                  rng.choice(("<", ">", "<=", ">=")), k, thr, s, rng.choice((0.5, -1.25, 2.0, 0.75)), then, other)


def _index_map(rng, n):
    kind = rng.choice(("id", "shift", "rev", "xor"))
    if kind in ("shift", "xor"):
        return (kind, rng.randint(1, n - 1)) if n > 1 else ("id", 0)
    return (kind, 0)


def gen_threads(rng, seed):
    n = rng.choice(spec.THREADS)
    rounds = tuple(Round("tree", rng.choice(("add", "max", "min"))) if rng.random() < 0.25 else
                   Round("perm", rng.choice(("add", "sub", "max", "min")), _index_map(rng, n), _index_map(rng, n))
                   for _ in range(rng.randint(1, 4)))
    return Threads(seed, rng.randint(1, 4), n, rng.choice(("float32", "int32")), rounds, _index_map(rng, n))


def gen_staging(rng, seed):
    n, lanes, rounds = rng.choice(spec.THREADS), rng.choice((1, 2, 4, 8)), rng.randint(1, 4)
    total = rounds * n * lanes
    widths = [w for w in (8, 16, 32, 64, 128, 256) if total % w == 0]
    return Staging(seed, rng.randint(1, 4), n, rng.choice(("float32", "int32")), rounds, lanes,
                   rng.choice(("flat", "rowcol")), rng.choice(widths), rng.random() < 0.5,
                   _index_map(rng, n) if rng.random() < 0.6 else (), rng.choice((0, 0, 7, 16, 64)),
                   rng.randint(0, 5), rng.randint(0, 3))


def gen_atomic_scalar(rng, seed):
    return AtomicScalar(seed, rng.randint(1, 64), rng.randint(1, 32), rng.choice(spec.THREADS),
                        rng.choice(("float32", "int32")), rng.randint(1, 16), rng.randint(0, 5), rng.randint(0, 5),
                        rng.randint(0, 3), rng.choice(("serial", "parallel")), rng.choice(("elem", "elem", "one")),
                        rng.choice(("add", "add", "max", "min")))


def gen_atomic_tile(rng, seed):
    bm, bn = _tile(rng, (8, 16, 32, 64), 2048)
    ragged = rng.random() < 0.3
    return AtomicTile(seed, _extent(rng, bm, 1.0 if ragged else 0.0, 2), _extent(rng, bn, 1.0 if ragged else 0.0, 2),
                      bm, bn, rng.randint(1, 4), rng.choice(spec.THREADS), rng.choice(("float32", "int32")),
                      rng.choice(("shared", "fragment")), rng.choice(("start", "slice")))


def gen_gemm_chain(rng, seed):
    bm, bn, D = rng.choice((64, 128, 32)), rng.choice((64, 128, 32)), rng.choice((64, 128, 32))
    in_dtype = "bfloat16" if rng.random() < 0.25 else "float16"
    M = bm * rng.randint(1, 3) if rng.random() < 0.7 else 16 * rng.randint(1, 16)
    N = bn * rng.randint(1, 4) if rng.random() < 0.7 else 16 * rng.randint(1, 24)
    return GemmChain(seed, M, N, D, bm, bn, rng.choice((128, 128, 256)), in_dtype, rng.choice(("float32", in_dtype)),
                     rng.choice((1.0, 0.5, 0.25, 0.125, 0.0625)), rng.randint(0, 3),
                     "serial" if rng.random() < 0.15 else "pipelined", "shared" if rng.random() < 0.2 else "fragment",
                     "Square" if rng.random() < 0.25 else "FullRow")


GENERATORS = {"Elementwise": gen_elementwise, "CopyChain": gen_copy, "Reduce": gen_reduce, "Gemm": gen_gemm,
              "Branch": gen_branch, "Threads": gen_threads, "AtomicScalar": gen_atomic_scalar, "Staging": gen_staging,
              "AtomicTile": gen_atomic_tile, "TileChain": gen_tile_chain, "LoopReduce": gen_loop_reduce,
              "GemmChain": gen_gemm_chain}
