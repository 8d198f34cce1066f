"""Simplify every expression in the function (constant folding, affine forms)."""
from tilelang.arith.simplify import Simplifier
from tilelang.transform.pass_manager import function_pass


@function_pass("simplify")
def simplify(func):
    return func.with_body(Simplifier().visit(func.body))


def apply_simplify(func, inline_let: bool = False):
    """The published `apply_simplify(prim_func)`: the simplify pass on one function, then
    its tensor parameters that the body never touches are dropped (the published
    `Simplify(simplify_arguments=True)`: `gemv(with_bias=False)` takes (A, B, C))."""
    return drop_unused_tensor_params(simplify(func))


def drop_unused_tensor_params(func):
    from tilelang.ir.buffer import Buffer
    from tilelang.ir.visitor import walk, collect_vars
    used, body_vars = set(), set()

    def note(n):
        for x in [n] + list(getattr(n, "__dict__", {}).values()):
            for y in (x if isinstance(x, (list, tuple)) else [x]):
                b = getattr(y, "buffer", None)
                if isinstance(b, Buffer):
                    used.add(id(b))
                elif isinstance(y, Buffer):
                    used.add(id(y))
    walk(func.body, note)
    body_vars.update(id(v) for v in collect_vars(func.body))
    keep = []
    for p in func.params:
        dims = [v for d in getattr(p, "shape", ()) for v in collect_vars(d)] if isinstance(p, Buffer) else []
        if not isinstance(p, Buffer) or id(p) in used or any(id(v) in body_vars for v in dims):
            keep.append(p)
    if len(keep) == len(func.params):
        return func
    from tilelang.ir.function import PrimFunc
    return PrimFunc(func.name, keep, func.body, attrs=dict(func.attrs), span=func.span, source=func.source)


def simplify_prim_func(factory):
    """The published decorator: simplify the PrimFunc that `factory(...)` returns."""
    import functools

    @functools.wraps(factory)
    def wrapper(*args, **kwargs):
        return apply_simplify(factory(*args, **kwargs))
    return wrapper
