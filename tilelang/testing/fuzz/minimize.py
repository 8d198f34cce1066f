"""Shrink a failing description: greedy descent over smaller valid variants (drop a list
element, replace an expression node by a child, a leaf or a constant, halve a size, pick
a simpler option), keeping each variant for which `fails(variant)` is still true, until
none is left or the budget of tries is spent. `same_failure` builds the usual predicate:
the variant fails at the same stage on the same target."""
from __future__ import annotations

import dataclasses

from tilelang.testing.fuzz import spec
from tilelang.testing.fuzz.generate import renumber
from tilelang.testing.fuzz.spec import (EXPR_TYPES, Binary, Cast, Const, InvalidProgram, Leaf, Select, Unary,
                                        children, expr_dtype)

# for option fields: the values tried, simplest first
SIMPLER = {
    "guard": ("if", "copy", "if_then_else"),
    "copy_form": ("start", "slice"), "form_in": ("start", "slice"), "form_out": ("start", "slice"),
    "form": ("start", "slice"),
    "loop": ("serial", "pipelined"),
    "epilogue": ("none", "relu", "scale"),
    "scope": ("shared", "fragment"), "scope1": ("shared", "fragment"), "scope2": ("shared", "fragment"),
    "value": ("one", "elem"),
    "reduce": ("", "sum", "max", "min", "abssum", "absmax"),
    "cond": ("scalar", "flag", "index", "elem"),
    "combine": ("add", "sub", "max", "min", "mul"),
    "acc_op": ("add", "max"),
    "policy": ("Square", "FullRow", "FullCol"),
    "op": ("add", "max", "min"),
}
DTYPE_FIELDS = ("out_dtype", "src_dtype", "dtype1", "dtype2", "dtype", "accum_dtype", "in_dtype", "work",
                "acc_dtype")
BOOLS_SIMPLE = {"trans_A": False, "trans_B": False, "via_shared": False, "a_frag": False}


# ------------------------------------------------------------------ expressions

def _paths(e, path=()):
    yield path, e
    for k, c in enumerate(children(e)):
        yield from _paths(c, path + (k,))


def _replace(e, path, new):
    if not path:
        return new
    kids = list(children(e))
    kids[path[0]] = _replace(kids[path[0]], path[1:], new)
    if isinstance(e, Cast):
        return Cast(e.dtype, kids[0])
    if isinstance(e, Unary):
        return Unary(e.op, kids[0])
    if isinstance(e, Binary):
        return Binary(e.op, *kids)
    return Select(e.cmp, *kids)


def expr_variants(e, inputs):
    """Smaller expressions (of the same dtype below the root; not all of them valid)."""
    yield from children(e)
    for path, node in _paths(e):
        if isinstance(node, (Leaf, Const)):
            continue
        dt = expr_dtype(node, inputs)
        for c in children(node):
            if expr_dtype(c, inputs) == dt:
                yield _replace(e, path, c)
        for k, d in enumerate(inputs):
            if d == dt:
                yield _replace(e, path, Leaf(k))
        yield _replace(e, path, Const(1, dt))


# ------------------------------------------------------------------ programs

def _drop_unused_inputs(p):
    """`p` without inputs that no expression reads (leaves renumbered)."""
    names = [n for n in ("expr", "then", "other") if hasattr(p, n)]
    if not hasattr(p, "inputs") or not names:
        return p
    used = sorted(set(k for n in names for k in spec.leaves(getattr(p, n))))
    if getattr(p, "cond", None) == "elem":
        used = sorted(set(used) | {p.cond_input})
    if used == list(range(len(p.inputs))) or not used:
        return p
    remap = {k: i for i, k in enumerate(used)}
    changes = {n: renumber(getattr(p, n), remap) for n in names}
    changes["inputs"] = tuple(p.inputs[k] for k in used)
    if getattr(p, "scopes", ()):
        changes["scopes"] = tuple(p.scopes[k] for k in used)
    if hasattr(p, "cond_input"):
        changes["cond_input"] = remap.get(p.cond_input, 0)
    return dataclasses.replace(p, **changes)


def _smaller_ints(name, v, p):
    if name == "seed" or isinstance(v, bool) or v <= 0:
        return []
    if spec.family(p) == "Gemm" and name in ("M", "N", "K"):
        return sorted({16, (v // 2) // 16 * 16, v - 16} - {v, 0})
    if name in ("threads",):
        return [t for t in (32, 64, 128, 256) if t < v]
    out = {1, v // 2, v - 1} if name not in ("a", "b", "c", "r0", "c0", "s") else {0, v // 2, v - 1}
    if name in ("bm", "bn", "bk", "R", "C", "h", "w"):
        out |= {16, 32}
    return sorted(x for x in out if 0 <= x < v)


def variants(p):
    """Candidate simplifications of `p`, the biggest first (each may be invalid)."""
    fs = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
    # drop elements of lists
    for name in ("ops", "rounds", "dyn_M"):
        v = fs.get(name)
        if v and isinstance(v, (tuple, list)):   # (Staging's `rounds` is a count)
            for k in range(len(v)):
                rest = v[:k] + v[k + 1:]
                if name == "dyn_M":
                    yield dataclasses.replace(p, dyn_M=rest, M=rest[0] if rest else v[0])
                else:
                    yield dataclasses.replace(p, **{name: rest})
    # expressions
    inputs = fs.get("inputs") or (fs.get("dtype"),)
    for name, v in fs.items():
        if isinstance(v, EXPR_TYPES):
            for e in expr_variants(v, inputs):
                yield _drop_unused_inputs(dataclasses.replace(p, **{name: e}))
    # simpler options and dtypes
    for name, v in fs.items():
        if name in SIMPLER and v in SIMPLER[name]:
            for s in SIMPLER[name][:SIMPLER[name].index(v)]:
                yield dataclasses.replace(p, **{name: s})
        if name in DTYPE_FIELDS and v != "float32":
            yield dataclasses.replace(p, **{name: "float32"})
        if name in BOOLS_SIMPLE and v != BOOLS_SIMPLE[name]:
            yield dataclasses.replace(p, **{name: BOOLS_SIMPLE[name]})
    if "num_stages" in fs and fs["num_stages"] > 0:
        yield dataclasses.replace(p, num_stages=fs["num_stages"] - 1)
    if "ops" in fs:
        for k, op in enumerate(fs["ops"]):
            if not op.clear:
                cleared = dataclasses.replace(op, clear=True)
                yield dataclasses.replace(p, ops=fs["ops"][:k] + (cleared,) + fs["ops"][k + 1:])
    # sizes
    for name, v in fs.items():
        if isinstance(v, int):
            for s in _smaller_ints(name, v, p):
                yield dataclasses.replace(p, **{name: s})


def _valid(p):
    try:
        spec.validate(p)
        return True
    except InvalidProgram:
        return False


def minimize(p, fails, max_tries=200, log=None):
    """The smallest variant of `p` found for which `fails` holds; returns (program, tries)."""
    seen = {p}
    tries = 0
    progress = True
    while progress and tries < max_tries:
        progress = False
        for cand in variants(p):
            if cand in seen or not _valid(cand):
                continue
            seen.add(cand)
            tries += 1
            if fails(cand):
                if log:
                    log(f"  minimize: size {spec.size(p)} -> {spec.size(cand)}")
                p, progress = cand, True
                break
            if tries >= max_tries:
                break
    return p, tries


def same_failure(status, target="cpu", compile_only=False, arch="sm_90a"):
    """A predicate: the program still fails with `status` on the target."""
    from tilelang.testing.fuzz.run import check

    def fails(p):
        return check(p, target, compile_only, arch).status == status
    return fails
