"""`tilelang.language.tir.ir`: TIR expression names of the published package (those ours has)."""
from tilelang.ir.expr import Shuffle  # noqa: F401

__all__ = ["Shuffle"]
