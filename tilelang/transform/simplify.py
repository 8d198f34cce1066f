"""Simplify every expression in the function (constant folding, affine forms)."""
from tilelang.arith.simplify import Simplifier
from tilelang.transform.pass_manager import function_pass


@function_pass("simplify")
def simplify(func):
    return func.with_body(Simplifier().visit(func.body))
