"""Tile operations: block-level statements acting on whole regions. Each op keeps
its operands; its reference semantics as scalar loops live in
`transform/lower_tile_ops.py`, its layout rules and GPU lowering in the backends."""
from __future__ import annotations

from tilelang.ir.stmt import Stmt


class TileOp(Stmt):
    """A tile op; `annotations` hold what passes decided about it (a backend's form of a
    copy or a reduction ...): the IR Mutator carries them to the node it rebuilds."""
    op_name = "tile_op"

    def _init(self):
        super()._init()
        self.annotations = {}


# on a block-level statement (or a tile-level atomic) that names a thread index as written: every
# thread runs it, whatever simplifying its indices leaves (transform/mark_per_thread.py)
PER_THREAD = "per_thread"
# in Copy.annotations: the copy was written `T.tma_copy` (with or without a barrier)
IS_TMA_COPY = "is_tma_copy"
# ... and the `cluster_mask=` of a T.tma_copy load (consumed by transform/lower_cluster_mask.py)
CLUSTER_MASK = "cluster_mask"
# ... which that pass replaces by this one where a multicast from the mask's lowest-ranked
# block gives every receiver what its own load would (the source, the destination and the
# barrier are the same in every block, the copy runs in every block alike): a backend may
# then issue the multicast form (backend/cuda/plan/copy_forms.py) or each block's load
MULTICAST_MASK = "multicast_mask"


class Copy(TileOp):
    op_name = "copy"

    def __init__(self, src, dst, annotations=None):
        self._init()
        self.src, self.dst = src, dst  # BufferRegion each, extents checked to match
        self.annotations = dict(annotations or {})


class Fill(TileOp):
    op_name = "fill"

    def __init__(self, dst, value):
        self._init()
        self.dst, self.value = dst, value


# a Gemm annotation set by a backend's pipelining pass: the gemm issues its (wgmma) group
# and returns; the pass put the wait for it into the IR (T.warpgroup_wait)
ISSUE_ONLY = "issue_only"
# in Gemm.annotations: the gemm was written `T.wgmma_gemm`: a backend issues it as a
# warpgroup MMA or rejects the kernel saying why (never another form in silence)
WGMMA = "wgmma"


class Gemm(TileOp):
    op_name = "gemm"

    def __init__(self, A, B, C, trans_A=False, trans_B=False, policy="Square", clear_accum=False,
                 k_pack=1, wg_wait=0, annotations=None):
        self._init()
        self.A, self.B, self.C = A, B, C  # BufferRegion each (2-D views)
        self.trans_A, self.trans_B = bool(trans_A), bool(trans_B)
        self.policy = policy
        self.clear_accum = clear_accum
        self.k_pack, self.wg_wait = k_pack, wg_wait
        self.annotations = dict(annotations or {})


REDUCE_KINDS = ("sum", "max", "min", "abssum", "absmax", "bitand", "bitor", "bitxor")


class Reduce(TileOp):
    op_name = "reduce"

    def __init__(self, kind, src, dst, dim, clear=True, nan_propagate=False, batch=1):
        self._init()
        assert kind in REDUCE_KINDS
        self.kind, self.src, self.dst, self.dim, self.clear = kind, src, dst, dim, clear
        # max/min/absmax of floats: a NaN operand wins (default: the other operand does,
        # as CUDA's fmaxf/__hmax)
        self.nan_propagate = bool(nan_propagate)
        # outputs per cross-thread combine (a scheduling hint; results do not depend on it)
        self.batch = int(batch)


class CumSum(TileOp):
    """An inclusive scan along `dim`: `kind` "sum" (T.cumsum) or "max" (T.cummax)."""
    op_name = "cumsum"

    def __init__(self, src, dst, dim=0, reverse=False, kind="sum"):
        self._init()
        self.src, self.dst, self.dim, self.reverse, self.kind = src, dst, dim, reverse, kind


class FinalizeReducer(TileOp):
    """`T.finalize_reducer(buf)`: a `T.alloc_reducer` buffer whose copies (one per thread
    on the GPU, each holding partial results) are combined with `op` ("sum", "max",
    "min", "bitand", "bitor", "bitxor"), so that every copy holds the final values.
    With `dst` (the epoch form, see ReducerInit) the result goes to `dst` instead;
    transform/lower_reducers.py turns that form into this one."""
    op_name = "finalize_reducer"

    def __init__(self, buffer, op="sum", dst=None, batch=1):
        self._init()
        self.buffer, self.op, self.dst, self.batch = buffer, op, dst, batch


class ReducerInit(TileOp):
    """`T.reducer_init(acc[, init])`: opens a reduction epoch of the reducer `acc`; the
    optional `init` (evaluated here) is combined once into every output at the finalize."""
    op_name = "reducer_init"

    def __init__(self, buffer, init=None):
        self._init()
        self.buffer, self.init = buffer, init


class ReducerUpdate(TileOp):
    """`T.reducer_update(acc[indices], value)` inside a T.Parallel loop: each iteration
    contributes `value` to one output exactly once."""
    op_name = "reducer_update"

    def __init__(self, buffer, indices, value):
        self._init()
        self.buffer, self.indices, self.value = buffer, list(indices), value


class Atomic(TileOp):
    """`T.atomic_add/max/min`: dst (region) op= value (region or scalar expression)."""
    op_name = "atomic"

    def __init__(self, kind, dst, value, return_prev=False, memory_order=None, use_tma=False):
        self._init()
        self.kind, self.dst, self.value = kind, dst, value
        self.return_prev = return_prev
        # None / "relaxed", or "acquire", "release", "acq_rel", "seq_cst" (`consume` is acquire)
        self.memory_order = memory_order
        # `use_tma=True`: a shared tile added into global memory by one bulk tensor
        # reduction (sm_90+, backend/cuda/ops/tma_reduce.py); the result is the same
        self.use_tma = bool(use_tma)


def atomic_call(kind, dst, value, memory_order=None):
    """The IR call of one element's atomic: `atomic_<kind>(dst, value[, order])`, whose
    value is the element's previous content."""
    from tilelang.ir.expr import Call, StringImm
    args = [dst, value] + ([StringImm(memory_order)] if memory_order else [])
    return Call(f"atomic_{kind}", args, dst.dtype)


def atomic_order(call):
    """The memory order of an atomic call (None: relaxed)."""
    return call.args[2].value if len(call.args) > 2 else None


ATOMIC_LOAD, ATOMIC_STORE = "tl.atomic_load", "tl.atomic_store"


def is_atomic_access(call) -> bool:
    """An atomic read-modify-write, load or store: its first argument is the element it
    addresses (not a value to read)."""
    from tilelang.ir.expr import BufferLoad
    return (call.name.startswith("atomic_") or call.name in (ATOMIC_LOAD, ATOMIC_STORE)) and \
        bool(call.args) and isinstance(call.args[0], BufferLoad)
