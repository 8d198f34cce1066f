"""Description -> inputs and the numpy reference result.

`calls(p)` builds the arguments of each kernel call (one per size of a dynamic M) from
the description's seed: floats uniform in [-2, 2] (GEMM operands in [-1, 1]) rounded
into their dtype, int32 in [-50, 50]; atomics use multiples of 1/8 so that any order of
the additions gives the same float32 sum. Outputs start from random values, so a kernel
that writes where it should not is caught too. `expected(p, call)` gives each output as a
`numerics.Approx` (exact value and allowed error) computed from the same description."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilelang.testing.fuzz import numerics as nx
from tilelang.testing.fuzz import spec
from tilelang.testing.fuzz.numerics import Approx
from tilelang.testing.fuzz.spec import Binary, Cast, Const, Leaf, Param, Select, Unary


@dataclass
class Call:
    args: dict          # parameter name -> numpy array or Python scalar, in signature order
    M: int = None       # the size of the dynamic dimension in this call (or the static M)


def _values(rng, shape, dtype, family, role):
    if family in ("AtomicScalar", "AtomicTile") or (family == "Threads" and dtype == "int32"):
        hi = 1000 if dtype == "int32" else 32
        v = rng.integers(-hi, hi + 1, shape).astype(np.float64)
        return nx.stored(v if dtype == "int32" else v / 8, dtype)
    if dtype == "int32":
        return rng.integers(-50, 51, shape).astype(np.int32)
    lim = 1.0 if family in ("Gemm", "GemmChain") and role == "in" else 2.0
    return nx.stored(rng.uniform(-lim, lim, shape), dtype)


def calls(p):
    f = spec.family(p)
    sizes = getattr(p, "dyn_M", ()) or (getattr(p, "M", None),)
    out = []
    for n, M in enumerate(sizes):
        rng = np.random.default_rng([p.seed, n])
        args = {}
        for name, shape, dtype, role in spec.signature(p):
            if role == "scalar":
                args[name] = p.s if name == "s" else p.alpha
            elif name == "F":
                args[name] = rng.integers(-1, 2, shape).astype(np.int32)
            else:
                args[name] = _values(rng, tuple(M if d == "M" else d for d in shape), dtype, f, role)
        out.append(Call(args, M))
    return out


def outputs(p):
    return [(name, dtype) for name, _, dtype, role in spec.signature(p) if role == "out"]


def expected(p, call):
    """{output name: Approx} for one call."""
    return EXPECTED[spec.family(p)](p, call)


# ------------------------------------------------------------------ expressions

def _broadcast(a: Approx, shape):
    return Approx(np.broadcast_to(a.value, shape).astype(np.float64), np.broadcast_to(a.err, shape).astype(np.float64))


_CMP = {"<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal}


def evaluate(e, X, inputs, alpha=None) -> Approx:
    """The value of expression `e` with its error bound; X[k] is input k (exact)."""
    dt = spec.expr_dtype(e, inputs)
    if isinstance(e, Leaf):
        return X[e.index]
    if isinstance(e, Param):
        return Approx.exact(np.float64(alpha))
    if isinstance(e, Const):
        return Approx.exact(np.float64(e.value))
    if isinstance(e, Cast):
        return nx.cast(evaluate(e.arg, X, inputs, alpha), e.dtype, spec.expr_dtype(e.arg, inputs))
    if isinstance(e, Unary):
        a = evaluate(e.arg, X, inputs, alpha)
        if e.op == "neg":
            return Approx(-a.value, a.err)
        if e.op == "abs":
            return Approx(np.abs(a.value), a.err)
        return nx.exp(a, dt)
    if isinstance(e, Binary):
        a, b = evaluate(e.lhs, X, inputs, alpha), evaluate(e.rhs, X, inputs, alpha)
        if e.op in ("add", "sub"):
            return nx.add(a, b, dt, 1.0 if e.op == "add" else -1.0)
        if e.op == "mul":
            return nx.mul(a, b, dt)
        if e.op == "max":
            return nx.maximum(a, b)
        if e.op == "min":
            return nx.minimum(a, b)
        if e.op == "floordiv":
            return Approx.exact(np.floor_divide(a.value, b.value))
        return Approx.exact(np.mod(a.value, b.value))
    if isinstance(e, Select):
        a, b = evaluate(e.a, X, inputs, alpha), evaluate(e.b, X, inputs, alpha)
        return nx.select(_CMP[e.cmp](a.value, b.value), evaluate(e.then, X, inputs, alpha),
                         evaluate(e.other, X, inputs, alpha))
    raise spec.InvalidProgram(f"not an expression: {e!r}")


def _stored_expr(e, X, inputs, out_dtype, shape, alpha=None):
    v = evaluate(e, X, inputs, alpha)
    return _broadcast(nx.cast(v, out_dtype, spec.expr_dtype(e, inputs)), shape)


# ------------------------------------------------------------------ families

def _inputs(call, n):
    return [Approx.exact(nx.exact(call.args[f"X{k}"])) for k in range(n)]


def ref_elementwise(p, call):
    M, N = call.M, p.N
    y = _stored_expr(p.expr, _inputs(call, len(p.inputs)), p.inputs, p.out_dtype, (M, N))
    if p.guard == "if_then_else":
        shape = call.args["Y"].shape
        full = Approx.exact(np.zeros(shape))
        full.value[:M, :N], full.err[:M, :N] = y.value, y.err
        y = full
    return {"Y": y}


def _window_mask(n, block, start, extent):
    r = np.arange(n) % block
    return (r >= start) & (r < start + extent)


def ref_copy(p, call):
    x = call.args["X"]
    for dt in (p.dtype1, p.dtype2, p.out_dtype):
        x = nx.stored(nx.exact(x), dt)
    M, N = call.M, p.N
    mask = _window_mask(M, p.bm, p.r0, p.h)[:, None] & _window_mask(N, p.bn, p.c0, p.w)[None, :]
    return {"Y": Approx.exact(np.where(mask, nx.exact(x), nx.exact(call.args["Y"])))}


def _combine(kind, a: Approx, b: Approx, dtype):
    if kind in ("sum", "abssum"):
        return nx.add(a, b, dtype)
    return nx.maximum(a, b) if kind in ("max", "absmax") else nx.minimum(a, b)


def ref_reduce(p, call):
    M, N, R, C = call.M, p.N, p.R, p.C
    gy, gx = spec.ceildiv(M, R), spec.ceildiv(N, C)
    a = np.zeros((gy * R, gx * C))
    a[:M, :N] = nx.exact(call.args["A"])     # loads outside the tensor read 0
    tiles = a.reshape(gy, R, gx, C)
    out = {}
    for k, op in enumerate(p.ops):
        x = np.abs(tiles) if op.kind in ("abssum", "absmax") else tiles
        axis = 3 if op.dim % 2 == 1 else 1
        if op.kind in ("sum", "abssum"):
            red = Approx(x.sum(axis), nx.sum_bound(np.abs(x).sum(axis), x.shape[axis], p.dtype))
        else:
            red = Approx.exact(x.max(axis) if op.kind in ("max", "absmax") else x.min(axis))
        init, o = nx.exact(call.args[f"I{k}"]), nx.exact(call.args[f"O{k}"]).copy()
        err = np.zeros_like(o)
        if axis == 3:        # (gy, R, gx) -> O[tx, ty * R + r]
            red = Approx(red.value.transpose(2, 0, 1).reshape(gx, gy * R)[:, :M],
                         red.err.transpose(2, 0, 1).reshape(gx, gy * R)[:, :M])
            if not op.clear:
                red = _combine(op.kind, red, Approx.exact(init), p.dtype)
            o, err = red.value, red.err
        else:                # (gy, gx, C) -> O[ty * R, tx * C + c]
            red = Approx(red.value.reshape(gy, gx * C)[:, :N], red.err.reshape(gy, gx * C)[:, :N])
            rows = np.arange(gy) * R
            if not op.clear:
                red = _combine(op.kind, red, Approx.exact(init[rows]), p.dtype)
            o[rows], err[rows] = red.value, red.err
        out[f"O{k}"] = Approx(o, err)
    return out


def ref_gemm(p, call):
    a, b = nx.exact(call.args["A"]), nx.exact(call.args["B"])
    a = a.T if p.trans_A else a
    b = b.T if p.trans_B else b
    v, mag = a @ b, np.abs(a) @ np.abs(b)
    if p.accum_dtype == "float16":
        # one float16 rounding of the running sum per 16 products (mma.sync's f16 form)
        err = (spec.ceildiv(p.K, 16) + 1) * nx.UNIT["float16"] * mag + nx.sum_bound(mag, p.K, "float32") \
            + spec.ceildiv(p.K, 16) * nx.ETA["float16"]
    else:
        err = nx.sum_bound(mag, p.K, "float32")
    c = Approx(v, err)
    if p.epilogue == "relu":
        c = Approx(np.maximum(c.value, 0), c.err)
    elif p.epilogue == "scale":
        c = Approx(c.value * 0.5, c.err * 0.5 + nx.ETA[p.accum_dtype])
    out = {"C": nx.cast(c, p.out_dtype, p.accum_dtype)}
    if p.reduce:        # over each (bm, bn) tile's columns; columns past N hold 0
        gx = spec.ceildiv(p.N, p.bn)
        M = c.value.shape[0]
        padded = Approx(np.zeros((M, gx * p.bn)), np.zeros((M, gx * p.bn)))
        padded.value[:, :p.N], padded.err[:, :p.N] = c.value, c.err
        r = nx.reduce(_reshape(padded, (M, gx, p.bn)), 2, p.reduce, p.accum_dtype)
        out["R"] = Approx(r.value.T, r.err.T)
    return out


def ref_gemm_chain(p, call):
    q, k, v = (nx.exact(call.args[n]) for n in ("Q", "K", "V"))
    s = Approx(q @ k.T * p.scale, nx.sum_bound(np.abs(q) @ np.abs(k).T, p.D, "float32") * p.scale)
    pm = nx.cast(s, p.in_dtype, "float32")
    mag = np.abs(pm.value) @ np.abs(v)
    o = Approx(pm.value @ v, pm.err @ np.abs(v) + nx.sum_bound(mag, p.N, "float32"))
    return {"O": nx.cast(o, p.out_dtype, "float32")}


def _reshape(a: Approx, shape):
    return Approx(a.value.reshape(shape), a.err.reshape(shape))


def _expand(a: Approx, axis):
    return Approx(np.expand_dims(a.value, axis), np.expand_dims(a.err, axis))


def _padded(x, rows, cols):
    out = np.zeros((rows, cols))
    out[:x.shape[0], :x.shape[1]] = nx.exact(x)     # loads outside the tensor read 0
    return out


def _combine2(op, a: Approx, b: Approx, dtype):
    if op in ("add", "sub"):
        return nx.add(a, b, dtype, 1.0 if op == "add" else -1.0)
    if op == "mul":
        return nx.mul(a, b, dtype)
    return nx.maximum(a, b) if op == "max" else nx.minimum(a, b)


def ref_tile_chain(p, call):
    M, N, bm, bn = p.M, p.N, p.bm, p.bn
    gy, gx = spec.ceildiv(M, bm), spec.ceildiv(N, bn)
    x = Approx.exact(_padded(call.args["A"], gy * bm, gx * bn))
    w = _reshape(_broadcast(evaluate(p.pre, [x], (p.dtype,)), x.value.shape), (gy, bm, gx, bn))
    axis = 3 if p.dim % 2 == 1 else 1
    r = nx.reduce(w, axis, p.kind, p.work)
    z = _reshape(_combine2(p.combine, w, _expand(r, axis), p.work), (gy * bm, gx * bn))
    y = nx.cast(Approx(z.value[:M, :N], z.err[:M, :N]), p.out_dtype, p.work)
    if axis == 3:           # (gy, bm, gx) -> R[tx, ty * bm + i]
        rr = Approx(r.value.transpose(2, 0, 1).reshape(gx, gy * bm)[:, :M],
                    r.err.transpose(2, 0, 1).reshape(gx, gy * bm)[:, :M])
    else:                   # (gy, gx, bn) -> R[ty, tx * bn + j]
        rr = Approx(r.value.reshape(gy, gx * bn)[:, :N], r.err.reshape(gy, gx * bn)[:, :N])
    return {"Y": y, "R": rr}


def ref_loop_reduce(p, call):
    M, nk = call.M, spec.ceildiv(p.N, p.bk)
    x = Approx.exact(_padded(call.args["A"], M, nk * p.bk))
    v = _reshape(_broadcast(evaluate(p.pre, [x], (p.dtype,)), x.value.shape), (M, nk, p.bk))
    if p.acc_op == "add":
        acc = nx.reduce(v, 1, "sum", p.acc_dtype)
    else:                   # the accumulator starts at 0 (T.clear)
        acc = nx.maximum(nx.reduce(v, 1, "max", p.acc_dtype), Approx.exact(np.zeros((M, p.bk))))
    return {"R": nx.reduce(acc, 1, p.kind, p.acc_dtype)}


def branch_mask(p, call):
    M, N = p.M, p.N
    gi, gj = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    if p.cond == "elem":
        return _CMP[p.cmp](nx.exact(call.args[f"X{p.cond_input}"]), p.threshold)
    if p.cond == "index":
        return _CMP[p.cmp](gi + gj, p.s)
    if p.cond == "flag":
        return _CMP[p.cmp](call.args["F"][(gi // p.bm) % spec.BRANCH_FLAGS], 0)
    return np.full((M, N), bool(_CMP[p.cmp](p.s, int(p.threshold))))


def ref_branch(p, call):
    X, shape = _inputs(call, len(p.inputs)), (p.M, p.N)
    alpha = float(np.float32(p.alpha))
    t = _stored_expr(p.then, X, p.inputs, p.out_dtype, shape, alpha)
    o = _stored_expr(p.other, X, p.inputs, p.out_dtype, shape, alpha)
    return {"Y": nx.select(branch_mask(p, call), t, o)}


def index_map(m, n):
    kind, k = m
    tx = np.arange(n)
    return {"id": tx, "shift": (tx + k) % n, "rev": n - 1 - tx, "xor": tx ^ k}[kind]


def _threads_op(op, a: Approx, b: Approx, dtype):
    if op in ("add", "sub"):
        return nx.add(a, b, dtype, 1.0 if op == "add" else -1.0)
    return nx.maximum(a, b) if op == "max" else nx.minimum(a, b)


def ref_threads(p, call):
    n = p.threads
    s = Approx.exact(nx.exact(call.args["A"]))
    for r in p.rounds:
        if r.kind == "perm":
            P, Q = index_map(r.p, n), index_map(r.q, n)
            s = _threads_op(r.op, Approx(s.value[:, P], s.err[:, P]), Approx(s.value[:, Q], s.err[:, Q]), p.dtype)
            continue
        stride = n // 2
        while stride >= 1:
            lo = Approx(s.value[:, :stride], s.err[:, :stride])
            hi = Approx(s.value[:, stride:2 * stride], s.err[:, stride:2 * stride])
            new = _threads_op(r.op, lo, hi, p.dtype)
            s = Approx(s.value.copy(), s.err.copy())
            s.value[:, :stride], s.err[:, :stride] = new.value, new.err
            stride //= 2
    F = index_map(p.final, n)
    return {"B": Approx(s.value[:, F], s.err[:, F])}


def ref_staging(p, call):
    n, lanes = p.threads, p.lanes
    a = nx.exact(call.args["A"]).reshape(p.blocks, p.rounds, n, lanes)
    dt = np.int64 if p.dtype == "int32" else np.float32   # the kernel's own additions, in order
    s = a.astype(dt)
    if p.exchange:
        perm = index_map(p.exchange, n)
        for r in range(1, p.rounds):
            s[:, r] = (a[:, r].astype(dt) + s[:, r - 1][:, perm]).astype(dt)
    out = {"B": Approx.exact(s.reshape(p.blocks, p.total).astype(np.float64))}
    if p.bins:
        h = np.bincount((np.arange(p.total) * p.a + p.c) % p.bins, minlength=p.bins)
        out["O"] = Approx.exact(np.tile(h, (p.blocks, 1)).astype(np.float64))
    return out


def ref_atomic_scalar(p, call):
    o = nx.exact(call.args["O"]).copy()
    bx, i = np.meshgrid(np.arange(p.blocks), np.arange(p.per), indexing="ij")
    vals = nx.exact(call.args["A"]) if p.value == "elem" else np.ones((p.blocks, p.per))
    ufunc = {"add": np.add, "max": np.maximum, "min": np.minimum}[p.op]
    ufunc.at(o, ((bx * p.a + i * p.b + p.c) % p.slots).ravel(), vals.ravel())
    return {"O": Approx.exact(o)}


def ref_atomic_tile(p, call):
    return {"O": Approx.exact(nx.exact(call.args["O"]) + nx.exact(call.args["A"]).sum(0))}


EXPECTED = {"Elementwise": ref_elementwise, "CopyChain": ref_copy, "Reduce": ref_reduce, "Gemm": ref_gemm,
            "Branch": ref_branch, "Threads": ref_threads, "AtomicScalar": ref_atomic_scalar, "Staging": ref_staging,
            "AtomicTile": ref_atomic_tile, "TileChain": ref_tile_chain, "LoopReduce": ref_loop_reduce,
            "GemmChain": ref_gemm_chain}
