"""The CPU pass pipeline: the reference semantics, with no GPU-specific passes."""
from tilelang.transform.pass_manager import run_passes
from tilelang.transform.implicit_kernel import implicit_kernel
from tilelang.transform.lower_tile_ops import lower_tile_ops
from tilelang.transform.pipelined_to_serial import pipelined_to_serial
from tilelang.transform.simplify import simplify

PASSES = [implicit_kernel, lower_tile_ops, pipelined_to_serial, simplify]


def lower(func, ctx):
    return run_passes(func, PASSES, ctx, stage="cpu")
