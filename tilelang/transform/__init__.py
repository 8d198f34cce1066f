"""Passes (one per file) and the pass manager."""
from tilelang.transform.pass_keys import PassConfigKey  # noqa: F401
