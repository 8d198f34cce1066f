"""Arithmetic on index expressions: simplification and a small prover."""
from tilelang.arith.simplify import simplify, prove, linear_form
