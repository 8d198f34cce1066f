"""Kernels with dynamic dimensions, specialized on divisibility.

A dimension known only at call time makes tile copies' row strides symbolic: the code
generator cannot prove a 16-byte vector aligned, so copies go element by element and a
`T.Pipelined` loop loses its asynchronous copies (the published dynamic-shape GEMM ran
30x slower than with the published package). Real shapes are almost always multiples of
16, so a second variant of the kernel is compiled where every dynamic dimension `d` is
`A * d_A` (A = `tl.dynamic_alignment`, default 16): its strides and bounds are multiples
of A by construction, and the vectorizer and pipeline planner see that. A call whose
dimensions all divide by A runs the variant; any other call runs the generic kernel, so
no shape is ever assumed."""
from __future__ import annotations

import copy

from tilelang.arith.simplify import simplify
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import IntImm, PrimExpr, Var, binop
from tilelang.ir.visitor import substitute, walk

DEFAULT_ALIGNMENT = 16


def alignment(pass_configs) -> int | None:
    """The divisor to specialize on (`tl.dynamic_alignment`; 0 or 1 turns it off)."""
    raw = (pass_configs or {}).get("tl.dynamic_alignment", DEFAULT_ALIGNMENT)
    try:
        a = int(raw)
    except (TypeError, ValueError):
        raise TileLangError(f"pass config tl.dynamic_alignment must be an integer, got {raw!r}") from None
    return a if a > 1 else None


def aligned_variant(func, a: int):
    """A copy of `func` in which every dynamic dimension `d` reads `a * d_a`, or None when
    `func` has none. Its dynamic variables are the `d_a` (same order as func's)."""
    if not func.dynamic_vars() or has_source_kernel(func):
        return None
    f = copy.deepcopy(func)
    mapping = {v: binop("*", IntImm(a, v.dtype), Var(f"{v.name}_div{a}", v.dtype)) for v in f.dynamic_vars()}
    bufs = [p for p in f.params if isinstance(p, Buffer)]
    walk(f.body, lambda n: bufs.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    seen = set()
    for b in bufs:
        if id(b) in seen:
            continue
        seen.add(id(b))
        b.shape = tuple(_sub(d, mapping) for d in b.shape)
        if b.strides:
            b.strides = tuple(_sub(s, mapping) for s in b.strides)
    f.body = substitute(f.body, mapping)
    f.name = func.name
    return f


def has_source_kernel(func):
    """T.CUDASourceCodeKernel: user code that takes the dimensions themselves as arguments
    (a variant would hand it d_a instead of d)."""
    found = []
    walk(func.body, lambda n: found.append(n) if isinstance(n, S.KernelLaunch) and
         "cuda_source" in (n.annotations or {}) else None)
    return bool(found)


def _sub(d, mapping):
    return simplify(substitute(d, mapping)) if isinstance(d, PrimExpr) else d
