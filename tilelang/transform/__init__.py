"""Passes (one per file) and the pass manager."""
from tilelang.transform.pass_keys import PassConfigKey  # noqa: F401
from tilelang.transform.simplify import apply_simplify, simplify_prim_func  # noqa: F401,E402
