"""`tilelang.language.tir.ir`: TIR expression names of the published package (those ours has)."""
from tilelang.ir.expr import Shuffle  # noqa: F401
from tilelang.ir.rounded_cast import ROUNDING_MODES as _VALID_CAST_ROUNDING_MODES  # noqa: F401
from tilelang.language.math import cast  # noqa: F401

__all__ = ["Shuffle", "cast"]
