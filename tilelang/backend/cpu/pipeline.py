"""The CPU pass pipeline: the reference semantics, with no GPU-specific passes."""
from tilelang.transform.pass_manager import run_passes
from tilelang.transform.implicit_kernel import implicit_kernel
from tilelang.transform.mark_per_thread import mark_per_thread
from tilelang.transform.lower_tile_ops import lower_tile_ops
from tilelang.transform.pipelined_to_serial import pipelined_to_serial
from tilelang.transform.simplify import simplify
from tilelang.transform.legalize_safe_memory_access import legalize_safe_memory_access
from tilelang.transform.flatten_sblocks import flatten_sblocks
from tilelang.transform.lower_cluster_mask import lower_cluster_mask
from tilelang.transform.widen_indices import widen_indices
from tilelang.transform.fold_vectorized_cp_async import fold_vectorized_cp_async
from tilelang.transform.lower_reducers import lower_reducers
from tilelang.transform.sink_address_tensors import sink_address_tensors
from tilelang.transform.rasterize_blocks import rasterize_blocks
from tilelang.transform.lower_warp_mma import lower_warp_mma
from tilelang.transform.lower_gemm_sp import lower_gemm_sp
from tilelang.transform.inline_copy_scalars import inline_copy_scalars

PASSES = [lower_gemm_sp, implicit_kernel, mark_per_thread, sink_address_tensors, lower_reducers, rasterize_blocks, lower_warp_mma, fold_vectorized_cp_async, lower_cluster_mask, lower_tile_ops, inline_copy_scalars,
          pipelined_to_serial, simplify, widen_indices, legalize_safe_memory_access, flatten_sblocks, simplify]


def lower(func, ctx):
    return run_passes(func, PASSES, ctx, stage="cpu")
