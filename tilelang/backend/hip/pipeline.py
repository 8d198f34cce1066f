"""The HIP backend's pass list: NVIDIA-only features refused first, then the generic
passes, keeping the tile ops the HIP codegen lowers itself (T.gemm -> MFMA, reductions ->
__shfl_xor across the 64 lanes of a wavefront) and the T.Pipelined loops, which codegen
double-buffers in registers (pipeline_regs.py) or runs as serial loops."""
from __future__ import annotations

from tilelang.ir import tile_ops as TO
from tilelang.transform.pass_manager import run_target_passes
from tilelang.transform.implicit_kernel import implicit_kernel
from tilelang.transform.lower_tile_ops import lower_tile_ops
from tilelang.transform.simplify import simplify
from tilelang.transform.legalize_safe_memory_access import legalize_safe_memory_access
from tilelang.transform.flatten_sblocks import flatten_sblocks
from tilelang.transform.lower_cluster_mask import lower_cluster_mask
from tilelang.transform.widen_indices import widen_indices
from tilelang.transform.lower_reducers import lower_reducers
from tilelang.transform.sink_address_tensors import sink_address_tensors
from tilelang.transform.rasterize_blocks import rasterize_blocks
from tilelang.transform.broadcast_block_effects import broadcast_block_effects
from tilelang.backend.hip.reject_features import reject_nvidia_features

KEEP_TILE_OPS = (TO.Gemm, TO.Reduce)

PASSES = [reject_nvidia_features, implicit_kernel, sink_address_tensors, lower_reducers, rasterize_blocks,
          lower_cluster_mask, lower_tile_ops, simplify, widen_indices, legalize_safe_memory_access, flatten_sblocks, simplify,
          broadcast_block_effects]


def lower(func, target, ctx=None):
    return run_target_passes(func, PASSES, target, ctx, KEEP_TILE_OPS, stage="hip")
