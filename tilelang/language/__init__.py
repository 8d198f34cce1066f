"""The `T` namespace: `import tilelang.language as T`."""
from tilelang.language.math import *  # noqa: F401,F403 (first: later imports take precedence)
from tilelang.ir.dtypes import DataType as dtype, DataType
from tilelang.ir.dtypes import (bool_ as bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,  # noqa: A004
                                float16, bfloat16, float32, float64, float8_e4m3fn, float8_e5m2)
from tilelang.ir.expr import Var, PrimExpr
from tilelang.ir.buffer import Ramp
from tilelang.language import store as _store  # noqa: F401 (records `buf[i] = v` in kernel bodies)
from tilelang.frontend.prim_func import prim_func
from tilelang.language.proxy import (Tensor, Buffer_ as Buffer, StridedTensor, dyn, dynamic, symbolic, const,
                                     empty, ptr, handle, match_buffer)
from tilelang.language.kernel import (Kernel, CUDASourceCodeKernel, launch_thread, get_thread_binding, get_thread_bindings, get_block_binding,
                                      get_block_bindings, get_thread_extent, use_swizzle, get_lane_idx,
                                      get_warp_idx, get_warp_group_idx, get_warp_idx_sync,
                                      get_thread_extents, get_block_extent, get_block_extents,
                                      annotate_min_blocks_per_sm)
from tilelang.language.block import sblock, block, reads, writes
from tilelang.language.loops import serial, unroll, vectorized, Parallel, Pipelined, grid, Persistent
parallel = Parallel   # TVM's lower-case spelling
from tilelang.language.alloc import (alloc_shared, alloc_fragment, alloc_local, alloc_var, alloc_global,
                                     alloc_buffer, alloc_barrier, alloc_reducer, finalize_reducer, reducer_init,
                                     reducer_update, reshape, view)
from tilelang.language.copy import copy, async_copy, tma_copy
from tilelang.language.gemm import gemm, GemmWarpPolicy, wgmma_gemm, wait_wgmma
from tilelang.language.gemm_sp import gemm_sp
from tilelang.language.reduce import (reduce_sum, reduce_max, reduce_min, reduce_abssum, reduce_absmax,
                                      reduce_bitand, reduce_bitor, reduce_bitxor, reduce, cumsum, cummax, fill, clear)
from tilelang.language.atomic import (atomic_add, atomic_max, atomic_min, atomic_addx2, atomic_addx4, atomic_or,
                                      atomic_and, atomic_xor)
from tilelang.language.math import (abs, max, min, pow, cast, Cast, if_then_else, Select, infinity, ninf,  # noqa: A004
                                    ceildiv, floordiv, floormod, truncdiv, truncmod, max_value, min_value,
                                    reinterpret, clamp, isnan, isinf, isfinite, And, Or, Not, all_of, any_of,
                                    align_up)
from tilelang.language import math as _math
from tilelang.layout import Layout, Fragment  # noqa: F401  (T.Layout / T.Fragment)
from tilelang.language.misc import (print, device_assert, assume, let, func_attr, annotate_pass_configs, annotate_compile_flags, annotate_layout, annotate_padding,  # noqa: A004
                                    annotate_l2_hit_ratio, annotate_restrict_buffers, annotate_safe_value,
                                    sync_threads, sync_warp,
                                    sync_global, set_max_nreg, no_set_max_nreg, disable_warp_group_reg_alloc,
                                    inc_max_nreg, dec_max_nreg, annotate_producer_reg_dealloc,
                                    annotate_consumer_reg_alloc, evaluate)

float = float32  # noqa: A001 - `T.float` is float32 as in the published API
half = float16
double = float64
float8_e4m3 = float8_e4m3fn
tfloat32 = DataType("tfloat32")

for _n in dir(_math):
    if _n.startswith("__") and _n.endswith(("exp", "exp2", "exp10", "log", "log2", "log10", "sin", "cos",
                                            "tan", "tanh", "ffs", "fns")) and not _n.endswith("__"):
        globals()[_n] = getattr(_math, _n)
from tilelang.language.compat import region, loop_break, atomic_load, atomic_store, index_to_coordinates  # noqa: E402
int4 = DataType("int4")
uint4 = DataType("uint4")
from tilelang.language.sync import (ws, mbarrier_wait_parity, mbarrier_arrive, mbarrier_expect_tx,  # noqa: E402
                                    barrier_arrive, barrier_wait, fence_proxy_async, tma_store_arrive, tma_store_wait, cp_async_barrier_noinc,
                                    mbarrier_arrive_expect_tx, ptx_arrive_barrier, ptx_arrive_barrier_expect_tx,
                                    ptx_cp_async_barrier, ptx_init_barrier_thread_count, ptx_fence_barrier_init,
                                    named_barrier_arrive, ptx_commit_group, ptx_wait_group)
from tilelang.language.extern import import_source, call_extern, access_ptr, dp4a  # noqa: E402
from tilelang.language.warp import (shfl_xor, shfl_down, shfl_up, shfl_sync, warp_reduce_sum,  # noqa: E402
                                    tvm_warp_shuffle, tvm_warp_shuffle_down, tvm_warp_shuffle_up,
                                    warp_reduce_max, warp_reduce_min, warp_reduce_bitand, warp_reduce_bitor,
                                    any_sync, all_sync, ballot_sync, ballot, activemask, syncthreads_count,
                                    syncthreads_and, syncthreads_or, match_any_sync, match_all_sync,
                                    shuffle_elect)
from tilelang.language.thread_reduce import attr, comm_reducer, tvm_thread_allreduce  # noqa: E402
from tilelang.language.kernel import thread_binding  # noqa: E402
int = int32  # noqa: A001 - `T.int` / `T.uint` as in the published API
uint = uint32
from tilelang.language.ptx import ptx_cp_async  # noqa: E402
from tilelang.language.memory_ops import (ldg, ldg32, ldg64, ldg128, ldg256, stg32, stg64, stg128, stg256,  # noqa: E402
                                          lds32, lds64, lds128, sts32, sts64, sts128)
__ldg = ldg   # CUDA's spelling: T.__ldg(A[i])
from tilelang.language.random import rng_init, rng_rand, rng_rand_float  # noqa: E402
from tilelang.language.pdl import pdl_trigger, pdl_sync  # noqa: E402
from tilelang.language.loops import Serial, Unroll, Vectorized  # noqa: E402
from tilelang.language.proxy import (SharedBuffer, LocalBuffer, FragmentBuffer, make_tensor,  # noqa: E402
                                     make_tensor_from_addr)
from tilelang.language.transpose import transpose  # noqa: E402
from tilelang.language.tir_compat import allocate, get_let_value, has_let_value  # noqa: E402
from tilelang.frontend.macro import macro, inline, Ref  # noqa: E402
from tilelang.language.im2col import im2col, c2d_im2col  # noqa: E402
from tilelang.language.cluster import (ClusterKernel, cluster_arrive, cluster_arrive_relaxed,  # noqa: E402
                                       cluster_wait, cluster_sync, block_rank_in_cluster, sync_grid,
                                       alloc_cluster_barrier, ptx_arrive_cluster_barrier, mbarrier_arrive,
                                       copy_cluster)
from tilelang.language.tensor_core_ptx import ptx_wgmma_ss, ptx_wgmma_rs, ptx_ldmatrix, ptx_mma  # noqa: E402
from tilelang.language.warpgroup import (warpgroup_arrive, warpgroup_commit_batch, warpgroup_wait,  # noqa: E402
                                         warpgroup_fence_operand)
from tilelang.language.descriptor import (alloc_descriptor, alloc_wgmma_desc, initialize_wgmma_descriptor,  # noqa: E402
                                          increase_descriptor_offset)
from tilelang.layout.mma_index import get_ldmatrix_offset, get_mma_micro_size, mma_store_index_map  # noqa: E402
from tilelang.layout.mma_swizzle import make_mma_swizzle_layout, get_swizzle_layout  # noqa: E402
from tilelang.language.tile_schedule import BaseTileScheduler, PersistentTileScheduler, meta_class  # noqa: E402
long = int64  # noqa: A001 - C spellings of the published API
short = int16
float8_e4m3fnuz = DataType("float8_e4m3fnuz")
float8_e5m2fnuz = DataType("float8_e5m2fnuz")
float8_e8m0fnu = DataType("float8_e8m0fnu")
float4_e2m1fn = DataType("float4_e2m1fn")
float4_e2m1_unpacked = DataType("float4_e2m1_unpacked")   # shared-memory storage tag (ir/dtypes.py)


def __getattr__(name):
    """Vector types by name (`T.float32x2`, `T.float16x2`, `T.int8x4`, ...)."""
    head, _, lanes = name.rpartition("x")
    if head and lanes.isdigit():
        try:
            dt = DataType(name)
        except ValueError:
            pass
        else:
            globals()[name] = dt
            return dt
    raise AttributeError(f"module 'tilelang.language' has no attribute '{name}'")
from tilelang.language.lanes import extract_lane, Shuffle  # noqa: E402
