"""Published-style path of the index simplifier, which lives with the expressions it
simplifies (`tilelang.ir.simplify`: an expression's truth value and integer value use it)."""
from tilelang.ir.simplify import Simplifier, from_linear, linear_form, prove, simplify  # noqa: F401
