"""The CUDA backend's pass list: the generic passes, keeping the tile ops that the
CUDA codegen lowers itself (gemm -> tensor cores, reduce -> warp shuffles) and the
T.Pipelined loops; the kernel plan, barriers, copy forms, reduction forms, proxy fences, then
the cp.async software pipelines and the TMA rings of slot-by-slot bodies as IR
(plan/cp_async_pipeline.py, plan/tma_ring_pipeline.py), and the thread split of every
cooperative nest the printer will print (plan/thread_splits.py). The other pipelined loops (the GEMM ring keeping a wgmma in flight,
warp specialization, wgmma overlap) are scheduled by emit/kernel.py `pipelined`."""
from __future__ import annotations

from tilelang.ir import tile_ops as TO
from tilelang.transform.pass_manager import run_target_passes
from tilelang.transform.implicit_kernel import implicit_kernel
from tilelang.transform.mark_per_thread import mark_per_thread
from tilelang.transform.lower_tile_ops import lower_tile_ops, TMA_COPY, TMA_ATOMIC
from tilelang.transform.simplify import simplify
from tilelang.transform.legalize_safe_memory_access import legalize_safe_memory_access
from tilelang.transform.flatten_sblocks import flatten_sblocks
from tilelang.transform.lower_cluster_mask import lower_cluster_mask
from tilelang.transform.widen_indices import widen_indices
from tilelang.transform.fold_vectorized_cp_async import fold_vectorized_cp_async
from tilelang.transform.lower_reducers import lower_reducers
from tilelang.transform.sink_address_tensors import sink_address_tensors
from tilelang.transform.rasterize_blocks import rasterize_blocks
from tilelang.transform.lower_gemm_sp import lower_gemm_sp
from tilelang.transform.broadcast_block_effects import broadcast_block_effects
from tilelang.transform.fold_fragment_views import fold_fragment_views
from tilelang.transform.inline_copy_scalars import inline_copy_scalars

from tilelang.backend.cuda.ops.tma_reduce import plan_tma_atomics
from tilelang.backend.cuda.plan.plan_kernels import plan_kernels
from tilelang.backend.cuda.plan.sync import insert_barriers
from tilelang.backend.cuda.plan.copy_forms import plan_copy_forms
from tilelang.backend.cuda.plan.register_chunks import plan_register_chunks
from tilelang.backend.cuda.plan.reduce_forms import plan_reduce_forms
from tilelang.backend.cuda.plan.thread_splits import plan_thread_splits
from tilelang.backend.cuda.plan.private_barriers import drop_private_barriers
from tilelang.backend.cuda.plan.rolled_loops import plan_rolled_loops
from tilelang.backend.cuda.plan.proxy_fences import plan_proxy_fences
from tilelang.backend.cuda.plan.warp_specialize import plan_warp_specialize
from tilelang.backend.cuda.plan.cp_async_pipeline import pipeline_cp_async
from tilelang.backend.cuda.plan.cp_async_preload import preload_cp_async
from tilelang.backend.cuda.plan.early_ring_prologue import issue_ring_prologue_early
from tilelang.backend.cuda.plan.tma_ring_pipeline import pipeline_tma_ring
from tilelang.backend.cuda.plan.occupancy import plan_streaming_occupancy
from tilelang.backend.cuda.plan.register_prefetch import prefetch_serial_loads
from tilelang.backend.cuda.plan.stage_epilogue import stage_gemm_epilogue

KEEP_TILE_OPS = (TO.Gemm, TO.Reduce, TO.FinalizeReducer, TMA_COPY, TMA_ATOMIC)

PASSES = [lower_gemm_sp, implicit_kernel, mark_per_thread, stage_gemm_epilogue, sink_address_tensors, lower_reducers, rasterize_blocks, plan_tma_atomics,
          fold_vectorized_cp_async, lower_cluster_mask, prefetch_serial_loads, lower_tile_ops, simplify, widen_indices,
          legalize_safe_memory_access, flatten_sblocks, simplify, broadcast_block_effects, fold_fragment_views,
          inline_copy_scalars, plan_kernels,
          insert_barriers, plan_copy_forms, plan_register_chunks, plan_reduce_forms, plan_warp_specialize, plan_proxy_fences,
          pipeline_cp_async, preload_cp_async, pipeline_tma_ring, issue_ring_prologue_early, plan_thread_splits, drop_private_barriers,
          plan_rolled_loops, plan_streaming_occupancy]


def lower(func, target, ctx=None):
    return run_target_passes(func, PASSES, target, ctx, KEEP_TILE_OPS, stage="cuda")
