"""Published-style path of the interval bounds, which live with the expressions they bound
(`tilelang.ir.bounds`: the simplifier uses them)."""
from tilelang.ir.bounds import bound  # noqa: F401
