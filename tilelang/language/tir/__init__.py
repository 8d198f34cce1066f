"""`tilelang.language.tir`: the published package's module of TIR-level names."""
from tilelang.language.tir import ir  # noqa: F401
