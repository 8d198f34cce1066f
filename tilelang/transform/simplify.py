"""Simplify every expression in the function (constant folding, affine forms)."""
from tilelang.arith.simplify import Simplifier
from tilelang.transform.pass_manager import function_pass


@function_pass("simplify")
def simplify(func):
    return func.with_body(Simplifier().visit(func.body))


def apply_simplify(func, inline_let: bool = False):
    """The published `apply_simplify(prim_func)`: the simplify pass on one function."""
    return simplify(func)


def simplify_prim_func(factory):
    """The published decorator: simplify the PrimFunc that `factory(...)` returns."""
    import functools

    @functools.wraps(factory)
    def wrapper(*args, **kwargs):
        return apply_simplify(factory(*args, **kwargs))
    return wrapper
