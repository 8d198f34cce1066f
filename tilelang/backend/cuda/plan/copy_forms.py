"""How each copy runs on CUDA, decided once, as an IR-to-IR pass (`plan_copy_forms`).

lower_tile_ops made every T.copy a (predicated) T.Parallel nest; this pass reads the
kernel plan (plan/kernel.py: where each buffer lives, its strides and swizzle, the
pipelined loops) and records on each copy nest a `CopyForm` (annotation `copy_form`,
printed with the nest in the IR text and so in the lower trace):

- `TMA load` / `TMA store`: one bulk copy of the whole tile by one thread (sm_90+,
  ops/tma_load_sync.py, ops/tma_store.py);
- `TMA ring`: a copy of a T.Pipelined loop fed by bulk tensor copies (ops/tma.py,
  ops/tma_pipeline.py);
- `cp.async xV`: a pipelined copy issued asynchronously, V elements per instruction;
- `cp.async + wait xV`: a copy of a tile from global to shared memory outside a
  pipeline, 16-byte vectors, more per thread than the printer unrolls (sm_80+): every
  thread issues all its cp.async, then waits for them once (ops/cp_async.py). As loads and stores, ptxas kept
  four loads in flight and waited for them before the next four: FlashAttention's
  128 x 128 K/V tiles of a `num_stages=1` loop took four dependent round trips to memory
  each (`example_mha_fwd_bshd`). Not in a cp.async pipeline's body, whose groups the
  wait would drain;
- `vector xV`: V elements per load and store (ops/vector_copy.py);
- `scalar`: one element per access, with the reason no vector form holds;
- `registers`: a copy to or from a register fragment, laid out by its layout;
  `registers xW`: an accumulator stored W columns per 32-bit store or vector atomic
  (ops/register_store.py), or a thread tile's chunks copied W elements a vector
  (ops/register_vector.py); any nest storing registers so gets this form;
- `per-thread`: the nest runs inside one thread's code (no cooperative form).

The T.copy arguments the nest carries (lower_tile_ops COPY_ARGS) steer the choice:
`disable_tma` rules out every TMA form; `coalesced_width=N` asks for N elements per
vector (a vector or cp.async form; an error names the parameter when N does not fit
the dtypes, the extent, the alignment or the bounds checks; it rules out TMA, which
has no width); `eviction_policy` gives the form's global accesses that L2 priority
(`createpolicy` + `.L2::cache_hint`, include/tl_cuda/cache_hint.h), on the TMA load
and store of a whole tile too; a pipelined loop with such a copy uses cp.async, not
the TMA ring; `loop_layout` is not supported here (an error says so).

A `T.vectorized` loop gets its vector width (`for i in T.vectorized(8):  # copy -> vector x8 (16 B)`);
the lane loop of a `T.atomic_addx{n}` one vector atomic where its first element is aligned to
the vector (`# atomic -> vector atomic x2 (8 B)`, ops/vector_atomic.py `lane_width`).
The other cooperative nests get a form too, so that the printer chooses nothing: a fill
(`# fill -> vector x8 (16 B)`), an element-wise loop (`# loop -> ...`, ops/vector_compute.py),
and the nests this pass makes of the tile ops the CUDA pipeline kept and the hardware
cannot run as they are: a T.gemm the kernel plan gives no tensor-core form becomes its SIMT
loop (ops/mma.py `simt_gemm`, `# SIMT gemm -> scalar`); a T.tma_copy is either issued as
bulk copies on its mbarrier (a copy of the op carrying the form `TMA load (T.tma_copy ...)`,
sm_90 with TILELANG_CUDA_TMA_COPY=1 and a tile TMA can move, a slot of a user's ring of tiles
included; with a kept `multicast_mask` the mask's lowest-ranked block multicasts it) or becomes its copy nest, whose
form is chosen as any copy's. Such a replacement is made in the tree and in the plan's
statements of a pipelined body (PipelineInfo.rest).

The pass reads the kernel plan from the launch node (plan/plan_kernels.py, the pass
before this one) and records the forms on the nests of that plan's tree, in place: that
pass made them fresh for the CUDA passes, and the plan names them by identity. The code
generator (emit/kernel.py) prints the recorded form. The kept tile ops that the hardware runs
as loops become those loops here too: a `use_tma` atomic whose shared tile no tensor map
describes (the threads' atomics; otherwise the op carries `TMA reduction`), a block reduction
on a block that is not whole warps (its reference loop)."""
from __future__ import annotations

import copy
import dataclasses

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer
from tilelang.ir.errors import LoweringError
from tilelang.ir.visitor import _children, collect_vars, walk
from tilelang.transform.pass_manager import function_pass
from tilelang.transform.lower_tile_ops import COPY_ARGS
from tilelang.backend.cuda.analysis.block_level import BlockLevelWalk
from tilelang.backend.cuda.analysis.facts import parallel_nest
from tilelang.backend.cuda.layout.annotated import AnnotatedTile
from tilelang.backend.cuda.target import arch_number

from tilelang.backend.cuda.plan.copy_form import COPY_FORM, CopyForm, copy_form  # noqa: F401 (the record)
from tilelang.backend.cuda.layout import REGISTER_FRAGMENT_KINDS

SIMT_GEMM = "simt_gemm"   # on the SIMT loop of a T.gemm: that T.gemm


class _Kernel:
    """What the copy choices read of one kernel: its plan, its parameters, the options
    (the attributes the ops/ matchers take from the code generator)."""

    def __init__(self, launch, plan, func, target, options):
        self.launch, self.target, self.options = launch, target, options
        self.use_tma = options.tma
        bufs = [p for p in func.params if isinstance(p, Buffer)]
        ints = [p for p in func.params if isinstance(p, E.Var) and not p.dtype.is_float]
        floats = [p for p in func.params if isinstance(p, E.Var) and p.dtype.is_float]
        # (kind, object, C declaration) as emit/module.py lists them; the declarations are not needed here
        self.params = [("buffer", b, None) for b in bufs] + \
            [("int", v, None) for v in ints + list(func.dynamic_vars())] + [("float", v, None) for v in floats]
        self.param_bufs = {id(b) for b in bufs}
        self.plan = plan
        self.range = self.plan.regions.full
        self.async_copy = False
        self.aligned = {}

    def placement(self, buf):
        return self.plan.placements.get(id(buf))

    def strides(self, buf):
        p = self.placement(buf)
        return p.strides if p is not None and p.strides is not None else buf.get_strides()


def _args(st):
    return st.annotations.get(COPY_ARGS) or {}


def _error(st, msg, hint=None):
    return LoweringError(msg, getattr(st, "span", None), hint=hint)


def _wgmma_only(k, info):
    """Whether the pipelined body runs gemms and every one of them on wgmma into a register
    accumulator (what a producer warpgroup asks of a loop's gemms, plan/warp_specialize.py)."""
    gemms = []
    for st in info.rest:
        walk(st, lambda n: gemms.append(n) if isinstance(n, TO.Gemm) else None)
    from tilelang.backend.cuda.plan.kernel import wgmma_into_registers
    return bool(gemms) and all(wgmma_into_registers(k.plan, g) for g in gemms)


def _no_tma(st, ring=False):
    """T.copy's arguments rule out the TMA forms (`ring`: the pipelined ring, whose
    copies take no L2 hint here)."""
    a = _args(st)
    return bool(a.get("disable_tma")) or a.get("coalesced_width") is not None or \
        (ring and a.get("eviction_policy") is not None)


class _Chooser(BlockLevelWalk):
    """Walks a launch by the block-level rule (analysis/block_level.py) and chooses the form
    of each nest and kept tile op it reaches; `k.range` follows the warp-specialized
    branches (the TMA forms are for the whole block only)."""

    def __init__(self, k: _Kernel):
        self.k = k
        super().__init__(k.plan)
        self.forms = {}   # id(nest) -> CopyForm
        self.replaced = {}   # id(tile op) -> the statement that runs it (its nest, or the op with its form)
        self.in_cp_async_loop = False   # visiting the body of a pipelined loop fed by cp.async
        self.no_wait = False   # visiting a T.tma_copy's copy nest
        self.multicast = False   # a T.tma_copy multicasts to other blocks of the cluster

    @property
    def range(self):   # the walk's thread range is the kernel's, which the ops/ matchers read
        return self.k.range

    @range.setter
    def range(self, rng):
        self.k.range = rng

    # the walk's hooks
    def after_seq(self, seq):
        if self.k.options.tma_store_shared_wait:
            self.share_store_waits(seq)

    def cooperative_nest(self, nest):
        self.cooperative(nest)

    def per_thread_nest(self, nest):
        self.record(nest, lambda: CopyForm("per_thread", why=""), per_thread=True)

    def tile_op(self, st, block):
        k = self.k
        if isinstance(st, TO.Gemm) and block and k.plan.gemms.get(id(st)) is None:
            self.simt_gemm(st)
        elif isinstance(st, TO.Copy) and st.annotations.get("tma_barrier") is not None:
            self.tma_copy(st, block)
        elif isinstance(st, TO.Atomic) and st.use_tma:
            self.tma_atomic(st, block)
        elif isinstance(st, TO.Reduce) and block:
            self.reduce(st)

    def tma_atomic(self, op, block):
        """A kept `use_tma` atomic: one bulk reduction of the shared tile where a tensor map
        describes its layout (ops/tma_reduce.py), else the threads' atomics (its nest)."""
        from tilelang.backend.cuda.ops.tma_reduce import _tensor_map_swizzle
        from tilelang.transform.lower_tile_ops import lower_atomic, simplify_stmt
        if block and _tensor_map_swizzle(self.k, op.value.buffer) is not None:
            bulk = copy.copy(op)
            bulk.annotations = dict(getattr(op, "annotations", None) or {})
            bulk.annotations[COPY_FORM] = CopyForm("tma_reduce")
            self.replace(op, bulk)
            return
        nest = simplify_stmt(lower_atomic(op))
        self.replace(op, nest)
        self.visit(nest, block)

    def reduce(self, op):
        """A block reduction that no register, warp or per-thread form runs (a block that
        is not whole warps, the reduced buffer in shared memory): its reference loop
        (ops/reduce.py `reduce_form`, whose other forms plan/reduce_forms.py records)."""
        from tilelang.backend.cuda.ops.reduce import reduce_form
        from tilelang.transform.lower_tile_ops import lower_reduce
        if reduce_form(self.k, op).kind != "loop":
            return
        nest = lower_reduce(op)
        self.replace(op, nest)
        self.visit(nest, True)

    def replace(self, op, new):
        """`new` runs tile op `op` from now on (substituted in the tree after the walk)."""
        if getattr(new, "span", None) is None:
            new.span = getattr(op, "span", None)
        self.replaced[id(op)] = new

    def simt_gemm(self, op):
        """A T.gemm without a tensor-core form (the kernel plan has none for it): its SIMT
        loop, shared out over the block like any cooperative nest."""
        from tilelang.backend.cuda.ops.mma import simt_gemm
        nest = simt_gemm(op)
        nest.annotations[SIMT_GEMM] = op   # the gemm it runs (plan/report.py lists it with the gemms)
        self.replace(op, nest)
        self.nest_form(nest, "SIMT gemm")

    def tma_copy(self, op, block):
        """T.tma_copy: bulk copies on its mbarrier where TMA can move the tile (sm_90,
        TILELANG_CUDA_TMA_COPY=1: opt-in until the published kernels using it have run
        with them), else cp.async arriving on its mbarrier where that form holds
        (ops/cp_async_mbarrier.py), else its copy nest, planned as any copy."""
        from tilelang.transform.lower_tile_ops import lower_copy
        from tilelang.backend.cuda.ops.tma import match_tma
        k = self.k
        nest = lower_copy(op)
        if block and k.use_tma and k.options.tma_copy:
            t = match_tma(nest, k.plan, k.param_bufs, views=True)
            if t is not None and k.placement(t.dst).stages == 1:
                bulk = copy.copy(op)
                bulk.annotations = dict(op.annotations)
                # (transform/lower_cluster_mask.py kept the mask where the multicast lands
                # where each receiver's own load would; the barriers of every block are
                # initialized before any is multicast to: KernelPlan.cluster_barrier_init)
                mask = op.annotations.get(TO.MULTICAST_MASK)
                if mask is not None:
                    self.multicast = True
                bulk.annotations[COPY_FORM] = CopyForm("tma_copy", multicast=mask)
                self.replace(op, bulk)
                return
        from tilelang.backend.cuda.ops.cp_async_mbarrier import mbarrier_copy_width
        from tilelang.backend.cuda.plan.async_proxy import needs_fences
        # (a wgmma kernel fences after every mbarrier wait: ops/sync_calls.py)
        V = mbarrier_copy_width(k, nest, op.annotations["tma_barrier"], needs_fences(k) and not k.plan.uses_wgmma) \
            if block and k.options.cp_async_mbarrier else 0
        if V:   # cp.async whose landing completes the barrier's phase (ops/cp_async_mbarrier.py)
            kept = copy.copy(op)
            kept.annotations = dict(op.annotations)
            kept.annotations[COPY_FORM] = CopyForm("cp_async_mbarrier", V, V * op.dst.buffer.dtype.itemsize)
            self.replace(op, kept)
            return
        self.replace(op, nest)
        # as the copy it stands for was printed before this pass chose it: no cp.async + wait
        # (unmeasured in the producer ranges T.tma_copy is written for)
        saved, self.no_wait = self.no_wait, True
        self.visit(nest, block)
        self.no_wait = saved

    def share_store_waits(self, seq):
        """Bulk stores of tiles one after the other (the attention backward's dV, then dK): each
        but the last leaves the wait for its tile to be read to the next one's (one bulk group
        wait for both, not one a store; TILELANG_CUDA_TMA_STORE_SHARED_WAIT)."""
        from tilelang.backend.cuda.ops.tma_store import SHARED_WAIT
        for a, b in zip(seq.stmts, seq.stmts[1:]):
            fa, fb = self.forms.get(id(a)), self.forms.get(id(b))
            if getattr(fa, "kind", None) == "tma_store" and getattr(fb, "kind", None) == "tma_store":
                self.forms[id(a)] = CopyForm("tma_store", eviction=fa.eviction, why=SHARED_WAIT)

    def record(self, st, choose, per_thread=False):
        """Record the form of `st` when it is a copy (or carries T.copy arguments)."""
        from tilelang.backend.cuda.ops.vector_copy import match_copy, match_cast_copy, without_assumes
        body = without_assumes(parallel_nest(st)[3])
        if match_copy(body) is None and match_cast_copy(body) is None and COPY_ARGS not in st.annotations:
            return
        form = choose()
        args = _args(st)
        if args.get("loop_layout") is not None:
            raise _error(st, "T.copy(..., loop_layout=...) is not supported by the CUDA backend: its copies "
                             "spread a tile's elements over the threads in row-major order",
                         hint="remove loop_layout (the default distribution is coalesced)")
        for name in ("coalesced_width", "eviction_policy"):
            if per_thread and args.get(name) is not None:
                raise _error(st, f"T.copy(..., {name}={args[name]!r}): this copy runs inside one thread's code "
                                 f"(a per-thread loop or branch, or per-thread registers), where the CUDA backend "
                                 f"prints it as plain element accesses", hint=f"remove {name}, or move the copy "
                                                                              f"to block level")
        self.forms[id(st)] = form

    def vectorized(self, st):
        """A `T.vectorized` loop (anywhere: its thread's own code or a cooperative nest's
        body): the lanes of one vector atomic for a `T.atomic_addx{n}` lane loop
        (`# atomic -> vector atomic x2 (8 B)`), else V elements per vector where its accesses
        allow (`# copy -> vector x4 (16 B)`), else no form (element by element)."""
        from tilelang.backend.cuda.ops.vector_copy import vector_width, match_copy, without_assumes
        from tilelang.backend.cuda.ops.vector_atomic import lane_width, match_lanes
        if st.step is not None or E.const_int_value(st.min) != 0:
            return
        W = lane_width(self.k, st)
        if W:   # T.atomic_addx{W}: one vector atomic (ops/vector_atomic.py)
            item = match_lanes(st)[1].args[0].buffer.dtype.itemsize
            self.forms[id(st)] = CopyForm("atomic_lanes", W, W * item, subject="atomic")
            return
        V = vector_width(self.k, [st.var], [st.min], [st.extent], st.body, registers=True)
        if V:
            subject = "copy" if match_copy(without_assumes(st.body)) is not None else "loop"
            self.forms[id(st)] = CopyForm("vector", V, V * _stored_bytes(st.body), subject=subject)

    def nest_form(self, st, subject):
        """The form of a cooperative nest that copies nothing (a fill, an element-wise loop,
        the SIMT gemm): none where its register fragments lay it out (emit/kernel.py
        `fragment_loop`, emit/tile_loops.py), else its vector width or scalar."""
        from tilelang.backend.cuda.ops.vector_copy import vector_width
        k = self.k
        vars_, mins, exts, body = parallel_nest(st)
        if _laid_out_by_registers(k, vars_, exts, body):
            form = self.registers_form(st, subject)
            if form.width:   # (a plain slot loop needs no record: its fragments' layouts say it all)
                self.forms[id(st)] = form
            return
        V = vector_width(k, vars_, mins, exts, body)
        self.forms[id(st)] = CopyForm("vector", V, V * _stored_bytes(body), subject=subject) if V else \
            CopyForm("scalar", subject=subject)

    def registers_form(self, st, subject):
        """A nest run over the slots of its register fragments: `registers`, or
        `registers xW` where an accumulator goes out W columns per store
        (ops/register_store.py)."""
        from tilelang.backend.cuda.ops.register_store import store_width, split_store
        from tilelang.backend.cuda.ops.register_vector import chunk_vector_width, vector_copy_parts
        vars_, _, exts, body = parallel_nest(st)
        regs = [b for b in _buffers(body) if getattr(self.k.placement(b), "kind", None) in REGISTER_FRAGMENT_KINDS]
        if self.k.placement(regs[0]).kind == "tile":   # chunks of a thread tile as vectors (ops/register_vector.py)
            if any(isinstance(self.k.placement(b).acc, AnnotatedTile) for b in regs):
                return CopyForm("registers", subject=subject)   # a user's Fragment: element by element
            W = chunk_vector_width(self.k, vars_, exts, body, regs)
            if W:
                lays = {id(b): self.k.placement(b).acc for b in regs}
                jv = [v for v, e in zip(vars_, exts) if E.const_int_value(e) != 1][-1]
                _, store, load, _, side = vector_copy_parts(self.k, body, jv, W, lays)
                mem = load if side == "dst" else store
                return CopyForm("registers", W, W * mem.buffer.dtype.itemsize, subject=subject)
            return CopyForm("registers", subject=subject)
        W = store_width(self.k, vars_, exts, body, regs)
        if not W:
            return CopyForm("registers", subject=subject)
        return CopyForm("registers", W, W * split_store(body)[1].buffer.dtype.itemsize, subject=subject)

    def cooperative(self, st):
        from tilelang.backend.cuda.ops.tma_store import is_tma_store
        from tilelang.backend.cuda.ops import tma_load_sync
        from tilelang.backend.cuda.ops.vector_copy import match_copy, match_cast_copy, without_assumes
        k = self.k
        body = without_assumes(parallel_nest(st)[3])
        if match_copy(body) is None and match_cast_copy(body) is None and COPY_ARGS not in st.annotations:
            return self.nest_form(st, "fill" if _is_fill(body) else "loop")

        def choose():
            regs = [b for b in _buffers(st) if getattr(k.placement(b), "kind", None) in REGISTER_FRAGMENT_KINDS]
            if regs and not _laid_out_by_registers(k, *_vars_exts(st)):
                # a loop over replicated one-element fragments only: an ordinary shared-out copy
                return self._with_eviction(st, self._waited(st, self.vector(st, cp_async=False)))
            if regs:
                want = _args(st).get("coalesced_width")
                if want is not None:
                    raise _error(st, f"T.copy(..., coalesced_width={want}): this copy reads or writes the register "
                                     f"fragment `{regs[0].name}`, whose layout decides which thread moves which "
                                     f"elements", hint="remove coalesced_width")
                return self._with_eviction(st, self.registers_form(st, "copy"), registers=True)
            if not _no_tma(st) and k.range == k.plan.regions.full:
                if is_tma_store(st, k):
                    return self._with_eviction(st, CopyForm("tma_store"))
                if tma_load_sync.match(k, st) is not None:
                    return self._with_eviction(st, CopyForm("tma_load"))
            return self._with_eviction(st, self._waited(st, self.vector(st, cp_async=False)))
        self.record(st, choose)

    def _waited(self, st, form):
        """The vector form of a global -> shared tile copy as cp.async + wait, when that
        keeps more loads in flight (module docstring)."""
        k = self.k
        if form.kind != "vector" or form.nbytes != 16 or self.in_cp_async_loop or self.no_wait or \
                arch_number(k.target.arch) < 80 or _args(st).get("coalesced_width") is not None or \
                _args(st).get("eviction_policy") is not None:
            return form
        from tilelang.backend.cuda.ops.vector_copy import match_copy, without_assumes, nest_split
        vars_, mins, exts, body = parallel_nest(st)
        m = match_copy(without_assumes(body))
        if m is None or m[2].buffer.scope != "global" or getattr(k.placement(m[1].buffer), "kind", None) != "smem":
            return form
        if any(E.const_int_value(e) is None for e in exts):   # (a dynamic tile: left as it is)
            return form
        # an unrolled split (plan/thread_splits.py, the same rule) has all of a thread's loads in flight already
        how, unrolled = nest_split(exts, form.width, k.plan.nthreads, k.options.guarded_split)
        return form if how != "strided" or unrolled else CopyForm("cp_async_wait", form.width, form.nbytes)

    def pipelined(self, loop, info):
        from tilelang.backend.cuda.ops.tma_pipeline import tma_copies, ring_mode
        from tilelang.backend.cuda.plan.pipeline import overlapped_wgmma
        from tilelang.backend.cuda.plan.overlap import plan_overlap
        k = self.k
        from tilelang.backend.cuda.plan.pipeline import converting_copy
        tmas = None if any(_no_tma(c, ring=True) or converting_copy(c) for c in info.copies) else \
            tma_copies(k, info)
        if tmas is not None and any(t.flat is not None for t in tmas) and not _wgmma_only(k, info):
            # a plain bulk copy (ops/tma.py _bulk_run) puts a loop on the ring only where a producer
            # warpgroup may take it (plan/warp_specialize.py: wgmma gemms): attention backward on
            # mma.sync ran slower on the single-role ring than on cp.async (H200, 0.92 -> 0.87)
            tmas = None
        if info.issue_after_use:   # num_stages=1 (plan/pipeline.py): one version, cp.async groups
            use_tma = False
        elif info.guard is not None:   # a body under `if cond:`: the TMA ring with empty rounds, or cp.async
            use_tma = tmas is not None and ring_mode(k, info) is not None
        elif overlapped_wgmma(k, info):
            use_tma = tmas is not None
        elif arch_number(k.target.arch) >= 90 and plan_overlap(k, info) is not None:
            # plan/overlap.py: K and V on two TMA rings, or cp.async (TILELANG_CUDA_OVERLAP_RING=0)
            use_tma = tmas is not None and k.options.overlap_ring and ring_mode(k, info) == "free" and \
                plan_overlap(k, info).rings_ok
        else:
            use_tma = tmas is not None and ring_mode(k, info) is not None
        for c in info.copies:   # a converting copy: the threads' vector loads and stores (no cp.async form)
            self.record(c, (lambda: CopyForm("tma_ring")) if use_tma else
                        (lambda c=c: self._with_eviction(c, self.vector(c, cp_async=not converting_copy(c)))))
        saved, self.in_cp_async_loop = self.in_cp_async_loop, self.in_cp_async_loop or not use_tma
        for s in info.rest:
            self.visit(s, True)
        self.in_cp_async_loop = saved

    def vector(self, st, cp_async):
        """The vector (or cp.async) form of a cooperative copy nest, or the scalar one."""
        from tilelang.backend.cuda.ops.vector_copy import vector_width, width_problem
        k = self.k
        vars_, mins, exts, body = parallel_nest(st)
        want = _args(st).get("coalesced_width")
        kind = "cp_async" if cp_async else "vector"
        if want is None:
            V = vector_width(k, vars_, mins, exts, body)
            if not V:
                return CopyForm("scalar", why="no vector width fits the dtypes, alignment and bounds checks")
            return CopyForm(kind, V, V * _item(body))
        problem = width_problem(k, vars_, mins, exts, body, want)
        if problem is None and cp_async and want * _item(body) not in (4, 8, 16):
            problem = f"a cp.async copy moves 4, 8 or 16 bytes, and {want} elements are {want * _item(body)} bytes"
        if problem is not None:
            raise _error(st, f"T.copy(..., coalesced_width={want}): {problem}",
                         hint="choose a width that divides the copied rows and makes a 2-16 byte vector, "
                              "or leave coalesced_width out")
        if want == 1:
            return CopyForm("scalar", why="coalesced_width=1")
        return CopyForm(kind, want, want * _item(body))

    def _with_eviction(self, st, form, registers=False):
        policy = _args(st).get("eviction_policy")
        if policy is None:
            return form
        if arch_number(self.k.target.arch) < 80:
            raise _error(st, f"T.copy(..., eviction_policy={policy!r}) needs sm_80 or newer (L2 cache policies); "
                             f"the target is {self.k.target.arch}", hint="remove eviction_policy")
        from tilelang.backend.cuda.ops.vector_copy import match_copy, without_assumes
        body = without_assumes(parallel_nest(st)[3])
        if registers or match_copy(body) is None:
            raise _error(st, f"T.copy(..., eviction_policy={policy!r}): the hint applies to plain copies between "
                             f"global and shared memory; this one converts its elements or uses a register "
                             f"fragment", hint="copy through a shared buffer of the tensor's dtype, "
                                               "or remove eviction_policy")
        _, store, load, _ = match_copy(body)
        if store.buffer.scope != "global" and load.buffer.scope != "global":
            raise _error(st, f"T.copy(..., eviction_policy={policy!r}): neither side of this copy is in global "
                             f"memory, so there is no L2 access to give a hint to", hint="remove eviction_policy")
        if form.kind == "scalar" and store.buffer.dtype.itemsize not in (1, 2, 4, 8, 16):
            raise _error(st, f"T.copy(..., eviction_policy={policy!r}) on elements of {store.buffer.dtype}",
                         hint="remove eviction_policy")
        return CopyForm(form.kind, form.width, form.nbytes, policy, form.why)


def _item(body):
    from tilelang.backend.cuda.ops.vector_copy import match_copy, match_cast_copy, without_assumes
    body = without_assumes(body)
    m = match_copy(body)
    store, load = (m[1], m[2]) if m is not None else match_cast_copy(body)[1:]
    return max(store.buffer.dtype.itemsize, load.buffer.dtype.itemsize)


def _vars_exts(st):
    vars_, _, exts, body = parallel_nest(st)
    return vars_, exts, body


def _laid_out_by_registers(k, vars_, exts, body):
    """Whether the printer runs this nest over the slots of its register fragments
    (emit/kernel.py `cooperative`: an accumulator or row layout, or a thread tile that
    emit/tile_loops.py does not decline: one distributed fragment, or unit loops only)."""
    from tilelang.backend.cuda.layout.tile import Scalar
    regs = [b for b in _buffers(body) if getattr(k.placement(b), "kind", None) in REGISTER_FRAGMENT_KINDS]
    if not regs:
        return False
    if k.placement(regs[0]).kind != "tile":
        return True
    distributed = [b for b in regs if not isinstance(k.placement(b).acc, Scalar)]
    return bool(distributed) or all(E.const_int_value(e) == 1 for e in exts)


def _is_fill(body):
    """A nest storing one value that reads no buffer (T.fill / T.clear lowered)."""
    st = body
    while isinstance(st, S.IfThenElse) and st.else_body is None:
        st = st.then_body
    if not isinstance(st, S.BufferStore):
        return False
    loads = []
    walk(st.value, lambda n: loads.append(n) if isinstance(n, E.BufferLoad) else None)
    return not loads


def _stored_bytes(body):
    """The size of the element the nest stores (its last store; bytes)."""
    sizes = [1]
    walk(body, lambda n: sizes.append(n.buffer.dtype.itemsize) if isinstance(n, S.BufferStore) else None)
    return sizes[-1]


def _substitute(root, replaced):
    """Put each replacement of `replaced` (id(old) -> new) in place of its old statement
    in `root` (a tree of fresh nodes: plan/plan_kernels.py). Returns the ids it put."""
    done = set()

    def sub(n):
        new = replaced.get(id(n))
        if new is not None:
            done.add(id(n))
            return new
        return n

    def f(n):
        if isinstance(n, S.SeqStmt):
            n.stmts = [sub(x) for x in n.stmts]
        elif isinstance(n, (S.For, S.While, S.LetStmt)):
            n.body = sub(n.body)
        elif isinstance(n, S.IfThenElse):
            n.then_body = sub(n.then_body)
            n.else_body = sub(n.else_body) if n.else_body is not None else None
    walk(root, f)
    return done


def _address_in_bounds(root, forms):
    """Give the cp.async forms whose zero-fill guard reads no variable of an enclosing loop
    (nor a value let-bound from one) `in_bounds`: their source is addressed per guarded
    dimension (ops/vector_copy.py in_bounds_source), so that the compiler computes a row
    guard once instead of a pointer select for every copy of every iteration (DeepSeek mHC's
    gemm: 833 -> 730 instructions an iteration). A guard the loop changes has nothing to
    hoist and keeps the pointer select (the other form made ptxas serialize two wgmma groups
    of the attention-backward test kernel)."""
    from tilelang.backend.cuda.ops.vector_copy import match_copy, without_assumes, in_bounds_source

    def visit(n, varying):
        if isinstance(n, S.For):
            form = forms.get(id(n))
            if getattr(form, "kind", None) in ("cp_async", "cp_async_wait"):
                m = match_copy(without_assumes(parallel_nest(n)[3]))
                sel = m[3] if m is not None else None
                if sel is not None and not any(id(v) in varying for v in collect_vars(sel)) and \
                        in_bounds_source(m[2], sel) is not None:
                    forms[id(n)] = dataclasses.replace(form, in_bounds=True)
            if n.kind != S.PARALLEL:
                varying = varying | {id(n.var)}
        elif isinstance(n, S.LetStmt) and any(id(v) in varying for v in collect_vars(n.value)):
            varying = varying | {id(n.var)}
        for c in _children(n):
            if isinstance(c, S.Stmt):
                visit(c, varying)
    visit(root, frozenset())


def _buffers(st):
    out = {}
    walk(st, lambda n: out.setdefault(id(n.buffer), n.buffer) if isinstance(n, (E.BufferLoad, S.BufferStore)) else None)
    return list(out.values())


@function_pass("plan_copy_forms")
def plan_copy_forms(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches, with_plan

    def rewrite(launch, plan, target, options):   # (a launch with no plan: the caller's own CUDA source)
        ch = _Chooser(_Kernel(launch, plan, func, target, options))
        ch.visit(launch.body, True)
        if ch.multicast:
            plan = dataclasses.replace(plan, cluster_barrier_init=True)
            launch = with_plan(launch, plan)
        if ch.replaced:   # the kept tile ops that run as nests (or carry their form)
            done = _substitute(launch.body, ch.replaced)
            pipelines = {key: dataclasses.replace(info, rest=[ch.replaced.get(id(s), s) for s in info.rest])
                         for key, info in plan.pipelines.items()}
            done |= {id(s) for info in plan.pipelines.values() for s in info.rest if id(s) in ch.replaced}
            if done != set(ch.replaced):
                raise AssertionError("plan_copy_forms: a tile op to replace is not a statement of the kernel's tree")
            plan = dataclasses.replace(plan, pipelines=pipelines)
            launch = with_plan(launch, plan)
        walk(launch.body, lambda n: ch.vectorized(n) if isinstance(n, S.For) and n.kind == S.VECTORIZED else None)
        _address_in_bounds(launch.body, ch.forms)
        nests = {}
        walk(launch.body, lambda n: nests.setdefault(id(n), n) if isinstance(n, S.For) and id(n) in ch.forms else None)
        for key, form in ch.forms.items():
            nests[key].annotations[COPY_FORM] = form   # a node plan_kernels (or this pass) made for the plan
        return launch
    return map_planned_launches(func, ctx, rewrite)


__all__ = ["CopyForm", "COPY_FORM", "copy_form", "plan_copy_forms"]
