"""Lowered IR -> CUDA C++ (SIMT). One CUDA block per T.Kernel block.

- T.Parallel nests at block level are flattened and their iterations spread over
  the block's threads; a nest over register fragments (layout/fragment.py) runs,
  on every thread, over the slots that thread holds, with no barrier;
- other block-level code runs on every thread, identically; its stores to shared
  or global memory (and atomics, prints) run on thread 0 only;
- `__syncthreads()` goes where the pass `insert_barriers` (`plan/sync.py`) put a barrier node;
- gemm / reduce tile ops come from `ops/mma.py` / `ops/reduce.py`
  (a reduction of a register accumulator: per-thread slots, then quad shuffles)."""
from __future__ import annotations

import contextlib
import dataclasses

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, is_packed
from tilelang.ir.dtypes import DataType
from tilelang.ir.visitor import collect_vars
from tilelang.arith.simplify import simplify
from tilelang.transform.rasterize_blocks import BLOCK_REMAP
from tilelang.backend.cuda.analysis.block_level import body_block, branch_sides, cooperative, pipeline_of
from tilelang.backend.cuda.analysis.facts import parallel_nest
from tilelang.backend.cuda.emit.expr import ExprPrinter, ctype, cast_str, atomic_helper
from tilelang.backend.cuda.ops.wgmma import operand_offset
from tilelang.backend.cuda.ops.tma_pipeline import emit_tma_copy, tma_copies
from tilelang.backend.cuda.ops import tma_pipeline as tma_ring
from tilelang.backend.cuda.plan.plan_kernels import kernel_plan
from tilelang.backend.cuda.plan.pipeline import STAGED
from tilelang.backend.cuda.plan.thread_splits import thread_split_of, THREAD_SPLIT
from tilelang.backend.cuda.plan.rolled_loops import ROLLED
from tilelang.backend.cuda.ops.cp_async_mbarrier import emit_copy_on_mbarrier
from tilelang.backend.cuda.plan.copy_form import COPY_FORM, copy_form
from tilelang.backend.cuda.plan.register_chunks import register_chunks
from tilelang.backend.cuda.layout.fragment import TILE_2D, ColLayout, Tf32ALayout, Tf32ColsLayout, residue_offset
from tilelang.backend.cuda.ops.reduce import emit_warp_reduce, emit_register_reduce, emit_group_reduce, REDUCE_FORM
from tilelang.backend.cuda.layout.fragment import group_reduce
from tilelang.backend.cuda.ops.local_reduce import emit_local_reduce
from tilelang.backend.cuda.plan.sync import SyncPlanner, is_inserted_barrier
from tilelang.backend.cuda.ops.sync_calls import sync_call
from tilelang.backend.cuda.layout.tile import Scalar
from tilelang.backend.cuda.emit.tile_loops import emit_tile_loop, emit_tile_reduce
from tilelang.backend.cuda.ops.thread_allreduce import emit_thread_allreduce, emit_finalize_reducer
from tilelang.ir.extern import is_import_source
from tilelang.backend.c.names import CNames, C_RESERVED
from tilelang.backend.cuda.layout import REGISTER_FRAGMENT_KINDS

# CUDA's built-in names, on top of the words no C identifier may be
CUDA_RESERVED = C_RESERVED | {"half", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"}


class Names(CNames):
    """The kernel's C identifiers (backend/c/names.py), CUDA's built-ins reserved."""

    def __init__(self):
        super().__init__(CUDA_RESERVED)


def _guarded_store(body):
    """The store of a loop body `store` or `if c: store`, else the body."""
    if isinstance(body, S.IfThenElse) and body.else_body is None:
        body = body.then_body
    return body


def _reads_memory(value):
    """The expression loads from a buffer outside registers (a global or shared one)."""
    from tilelang.ir.visitor import walk
    found = []
    walk(value, lambda n: found.append(n) if isinstance(n, E.BufferLoad) and
         not n.buffer.scope.startswith("local") else None)
    return bool(found)


def _own_copy(plan, entry):
    """The plan the pass plan_kernels attached to the launch (plan/plan_kernels.py), as
    this printer's own copy: it adds what it makes while printing (the placements of the
    SIMT gemm's temporaries, the mbarriers of a TMA ring) without changing the IR's."""
    if plan is None:
        raise AssertionError(f"CUDA codegen: kernel `{entry}` has no kernel plan; lower it with the CUDA "
                             f"pass pipeline (backend/cuda/pipeline.py, pass plan_kernels) first")
    return dataclasses.replace(plan, placements=dict(plan.placements), notes=list(plan.notes))


class KernelCodegen:
    def __init__(self, launch, entry, target, params, names, options=None, param_bufs=()):
        self.launch, self.entry, self.target = launch, entry, target
        from tilelang.backend.cuda.options import CudaOptions
        self.options = options if options is not None else CudaOptions.from_config(None, target.arch)
        self.use_tma = self.options.tma
        self.param_bufs = set(param_bufs)   # ids of the function's tensor parameters
        self.tmaps = []                       # TmaCopy per tensor-map parameter (trailing)
        self.params = params          # [(kind, obj, c decl)] in kernel-parameter order
        self.names = names            # shared with the function level (params)
        self.plan = _own_copy(kernel_plan(launch), entry)
        self.barriers = SyncPlanner(self.plan)   # its rules of who runs a statement (the barriers are in the IR)
        from tilelang.backend.cuda.ops.tma_store import emit_tma_store
        from tilelang.backend.cuda.ops.tma_load_sync import emit_tma_load_sync
        self._emit_tma_store, self._emit_tma_load_sync = emit_tma_store, emit_tma_load_sync
        self.prologue = []            # lines the body's code needs at the kernel's start (ops/tma_load_sync.py)
        self.staged_arrays = {}       # tag -> the register array of a staged converting copy (plan/pipeline.py STAGED)
        self.aligned = {}            # global buffer name -> bytes its pointer must be aligned to
        self.acc_index = {}           # id(register fragment) -> C slot index inside its loop
        self.load_override = {}       # id(buffer) -> C expression of its element load (tile_codegen)
        self.async_copy = False       # vector copies emitted now are cp.async (pipelined)
        self.lines = []
        self.indent = 1
        self._addressed = None        # ids of buffers whose element addresses are taken
        self.range = self.plan.regions.full   # threads running the code emitted now (analysis/thread_ranges.py)
        self.ws_consumer = False      # code emitted now runs in the consumers of a warp-specialized kernel
        self.ring_maps = {}           # id(TmaRing) -> its tensor-map parameters (ops/tma_pipeline.py emit_ring_alloc)
        self.printer = ExprPrinter(names, self.access)

    # helpers ------------------------------------------------------------------
    def bind(self, var, base=None):
        return self.names.new(var, base or var.name)

    def expr(self, e):
        return self.printer(e)

    def w(self, line):
        self.lines.append("  " * self.indent + line)

    def buf_name(self, buf):
        n = self.names.get(id(buf))
        if n is None:
            raise NotImplementedError(f"buffer `{buf.name}` is used outside the kernel that declares it")
        return n

    def placement(self, buf):
        return self.plan.placements.get(id(buf))

    def strides(self, buf):
        p = self.placement(buf)
        if p is not None and p.strides is not None:
            return p.strides
        return buf.get_strides()

    def flat(self, buf, indices):
        p = self.placement(buf)
        if p is not None and p.layout is not None:   # an annotated layout (layout/shared.py)
            return self.expr(p.layout.offset_expr(*[simplify(i) for i in indices]))
        if p is not None and p.swizzle:
            rows = E.const_int_value(buf.shape[-2])
            row = self.expr(simplify(indices[-2]))
            if p.row_slabs > 1:   # a wgmma A tile whose warpgroups compute several slabs
                row = f"tl::slab_row<{p.row_slabs}>({row})"
            eb = f", {buf.dtype.itemsize}" if buf.dtype.itemsize != 2 else ""   # fp8: 1-byte elements
            tile = f"tl::sw{p.swizzle}<{rows}{eb}>({row}, {self.expr(simplify(indices[-1]))})"
            if buf.ndim == 2:
                return tile
            # [stages, R, C]: R x C swizzled tiles one after another (ops/wgmma.py swizzle_bytes)
            lead, size = E.IntImm(0), rows * E.const_int_value(buf.shape[-1])
            for k in reversed(range(buf.ndim - 2)):
                lead = E.binop("+", lead, E.binop("*", indices[k], size))
                size *= E.const_int_value(buf.shape[k])
            return f"{self.expr(simplify(lead))} + {tile}"
        terms = []
        for i, s in zip(indices, self.strides(buf)):
            sv = E.const_int_value(s)
            if sv == 0:
                continue
            terms.append(i if sv == 1 else E.binop("*", i, s))
        if not terms:
            return "0"
        total = terms[0]
        for t in terms[1:]:
            total = E.binop("+", total, t)
        return self.expr(simplify(total))

    def access(self, load):
        """C lvalue of buf[indices] (a BufferLoad or a store target)."""
        buf, idx = load.buffer, load.indices
        if isinstance(load, E.BufferLoad) and id(buf) in self.load_override:
            return self.load_override[id(buf)]
        p = self.placement(buf)
        name = self.buf_name(buf)
        if p is not None and p.kind in REGISTER_FRAGMENT_KINDS:
            if id(buf) not in self.acc_index and isinstance(p.acc, Scalar):
                return f"{name}[0]"
            if id(buf) not in self.acc_index:
                raise NotImplementedError(f"register fragment `{buf.name}` accessed outside its layout")
            slot = self.acc_index[id(buf)]
            return f"{name}[{slot(idx) if callable(slot) else slot}]"   # callable: tile_loops._owned_slot
        if p is not None and p.kind == "var":   # a T.alloc_var: one scalar variable
            return name
        if p is not None and p.kind == "view" and self._laid_out(buf.alias_of):
            return self._view_through_base(buf, idx)
        if is_packed(buf):   # a 4-bit element of a tensor: read out of its byte (stores: s_BufferStore)
            return f"tl::load4<{ctype(buf.dtype)}>({name}, (long long)({self.flat(buf, idx)}))"
        return f"{name}[{self.flat(buf, idx)}]"

    def _laid_out(self, base):
        """Whether a shared buffer's elements are not simply row-major (swizzled or padded rows)."""
        bp = self.placement(base)
        if bp is None or bp.kind != "smem":
            return False
        rm = base.get_strides()
        return bp.swizzle or bp.layout is not None or any(E.const_int_value(a) != E.const_int_value(b) for a, b in zip(self.strides(base), rm))

    def _view_through_base(self, view, idx):
        """An element of a view (T.reshape / T.view) of a swizzled or padded shared buffer:
        the view's flat byte offset names the base's logical element, which the base's own
        layout places; the value is read at that address as the view's dtype."""
        base = view.alias_of
        vsize, bsize = view.dtype.itemsize, base.dtype.itemsize
        bshape = [E.const_int_value(d) for d in base.shape]
        if None in bshape or (bshape[-1] * bsize) % vsize:
            raise NotImplementedError(f"a view of `{base.name}`: its elements would straddle the rows of the "
                                      f"base's shared-memory layout")
        flat = E.IntImm(0)
        for i, st in zip(idx, view.get_strides()):
            flat = E.binop("+", flat, E.binop("*", i, st))
        byte = simplify(E.binop("*", flat, vsize))
        elem = simplify(E.binop("//", byte, bsize))
        rem = simplify(E.binop("%", byte, bsize)) if vsize % bsize else E.IntImm(0)
        bidx, rest = [], elem
        for k in reversed(range(len(bshape))):
            bidx.append(simplify(E.binop("%", rest, bshape[k])) if k else rest)
            rest = simplify(E.binop("//", rest, bshape[k]))
        addr = f"&{self.buf_name(base)}[{self.flat(base, list(reversed(bidx)))}]"
        if E.const_int_value(rem) != 0:
            addr = f"reinterpret_cast<char*>({addr}) + ({self.expr(rem)})"
        return f"(*reinterpret_cast<{ctype(view.dtype)}*>({addr}))"

    # kernel ----------------------------------------------------------------------
    def emit(self):
        L = self.launch
        ws = self.plan.warp_specialized   # plan/warp_specialize.py: a producer warpgroup after the user's threads
        nt = ws.launch_threads if ws is not None else self.plan.nthreads
        sig = ", ".join(d for _, _, d in self.params)
        out = [f'extern "C" __global__ void __launch_bounds__({nt}{self._min_blocks()}) {self.entry}({sig}) {{']
        self.lines = out
        self.w("extern __shared__ __align__(1024) unsigned char tl_smem[];")
        self.w("const int tl_tid = tl::thread_linear();" if len(L.threads) > 1 else
               "const int tl_tid = threadIdx.x;")
        if self.plan.red_phase_bytes:
            self.w("int tl_rphase = 0;   // shared scratch phase of register-tile reductions")
        remap = L.annotations.get(BLOCK_REMAP)   # T.use_swizzle: block indices bound once, here
        for v, ax in zip(remap.hw_vars if remap else L.block_vars, "xyz"):
            self.w(f"const int {self.bind(v)} = blockIdx.{ax};")
        for v, e in (remap.bindings(L.block_vars) if remap else ()):
            if e is not v:
                self.w(f"const int {self.bind(v)} = {self.expr(e)};")
        for v, ax in zip(L.thread_vars, "xyz"):
            self.w(f"const int {self.bind(v)} = threadIdx.{ax};")
        for b in self._smem_buffers():
            p = self.placement(b)
            self.w(f"{ctype(b.dtype)}* {self.names.new(b, b.name)} = "
                   f"reinterpret_cast<{ctype(b.dtype)}*>(tl_smem + {p.offset});")
        body_start = len(out)
        self.stmt(L.body, block=True)
        out[body_start:body_start] = ["  " + line for line in self.prologue]   # state the body asked for
        out.append("}")
        if self.tmaps:
            sig = ", ".join([sig] * bool(sig) + [f"const __grid_constant__ tl::CUtensorMap "
                                                  f"{getattr(t, 'param_name', f'tl_tmap_{n}')}"
                                                  for n, t in enumerate(self.tmaps)])
            out[0] = f'extern "C" __global__ void __launch_bounds__({nt}{self._min_blocks()}) {self.entry}({sig}) {{'
        self._check_smem(L)
        threads = [nt] if ws is not None else [int(t) for t in L.threads]
        meta = {"entry": self.entry, "threads": threads + [1] * (3 - len(threads)),
                "grid": L.grid, "smem": self.plan.smem_bytes, "aligned": self.aligned,
                # plan/occupancy.py asked for the blocks: the build drops the cap where ptxas spills
                "streaming_occupancy": bool(self.launch.annotations.get("streaming_occupancy"))}
        # the wgmma instruction wrappers this kernel needs: the module prints each once (emit/module.py)
        meta["wgmma_configs"] = [c for c in self.plan.gemms.values() if getattr(c, "kind", "") == "wgmma"]
        return "\n".join(out), meta

    def _min_blocks(self):
        """__launch_bounds__'s second argument: the kernel's T.annotate_min_blocks_per_sm, else
        the options' default (1, as the published package prints: without it ptxas caps the
        registers to keep more blocks resident, e.g. 110 instead of 179 in mHC's TF32 gemm)."""
        n = self.launch.annotations.get("min_blocks_per_sm") or self.options.min_blocks_per_sm
        if not n and self.plan.sets_max_nreg:
            n = 1   # setmaxnreg needs a register count ptxas can determine at entry
        return f", {n}" if n else ""

    def _check_smem(self, L):
        from tilelang.backend.cuda.plan.kernel import max_dynamic_smem
        from tilelang.ir.errors import LoweringError
        import warnings
        for note in self.plan.notes:
            warnings.warn(f"{self.entry}: {note}", stacklevel=2)
        limit = max_dynamic_smem(self.target.arch)
        if self.plan.smem_bytes > limit:
            sizes = sorted(((self.placement(b).stage_bytes * self.placement(b).stages, b.name)
                            for b in self._smem_buffers()), reverse=True)
            top = ", ".join(f"{n} {sz // 1024} KB" for sz, n in sizes[:4])
            raise LoweringError(
                f"kernel `{self.entry}` needs {self.plan.smem_bytes} bytes of shared memory, more than the "
                f"{limit} one block may use on {self.target.arch} (largest: {top})",
                getattr(L, "span", None),
                hint="use smaller tiles, fewer pipeline stages, or fragments instead of shared buffers")

    def _smem_buffers(self):
        seen = []
        from tilelang.ir.visitor import walk
        walk(self.launch.body, lambda n: seen.append(n.buffer) if isinstance(n, S.DeclBuffer) and
             getattr(self.placement(n.buffer), "kind", None) == "smem" else None)   # (the SIMT gemm's temporaries: none)
        return seen

    def sync(self, fence=True):
        """A block barrier; shared memory that wgmma reads next was written by ordinary
        stores or cp.async (generic proxy): fence it toward the async proxy first
        (`fence=False`: the barrier only orders generic accesses, e.g. a reduction's
        scratch). Inside a warp-specialized branch: the named barrier of its thread range."""
        if fence and self.plan.fence_barriers:   # plan/proxy_fences.py
            self.w("tl::fence_proxy_async();")
        if self.range == self.plan.regions.full and self.ws_consumer:   # the producer warpgroup has left
            self.w(f'asm volatile("bar.sync {self.plan.warp_specialized.barrier_id}, {self.range.size};" ::: "memory");')
            return
        if self.range == self.plan.regions.full:
            self.w("__syncthreads();")
            return
        bid = self.plan.regions.barrier_ids.get(self.range)
        if bid is None:
            from tilelang.ir.errors import LoweringError
            raise LoweringError(f"kernel `{self.entry}`: more thread ranges need barriers than the 15 "
                                f"named barriers a block has")
        self.w(f'asm volatile("bar.sync {bid}, {self.range.size};" ::: "memory");')

    # statements ------------------------------------------------------------------
    def stmt(self, st, block):
        """Emit `st`; `block` is True at uniform block level (every thread runs the
        same code), False inside one thread's iteration or divergent control flow."""
        if st is None:
            return
        fn = getattr(self, "s_" + type(st).__name__, None)
        if fn is None:
            raise NotImplementedError(f"CUDA codegen: unsupported statement {type(st).__name__}")
        w = self.plan.wgmma_waits_before.get(id(st)) if self.plan is not None else None
        if w is not None:
            self.wgmma_wait(w)
        fn(st, block)
        w = self.plan.wgmma_waits_after.get(id(st)) if self.plan is not None else None
        if w is not None:
            self.wgmma_wait(w)

    def wgmma_wait(self, w):
        """plan/wgmma_waits.py: wait until only `w.left` wgmma groups are in flight, then
        fence the registers of the accumulators that completed."""
        in_flight = self.__dict__.setdefault("_wgmma_in_flight", [])
        done = {id(g) for g in w.gemms}
        mine = [(g, c) for g, c in in_flight if id(g) in done]
        if not mine:   # issued and waited for by a loop schedule of its own
            return
        # (groups issued meanwhile by such a schedule are newer: they only make this wait longer)
        self.w(f"tl::wgmma_wait<{w.left}>();")
        fenced = set()
        for g, c in mine:
            if id(g.C.buffer) not in fenced:
                fenced.add(id(g.C.buffer))
                self.w(f"tl::fence_regs<{c.slabs * c.inst_n // 2}>({self.buf_name(g.C.buffer)});")
        in_flight[:] = [(g, c) for g, c in in_flight if id(g) not in done]

    def s_SeqStmt(self, st, block):
        for s in st.stmts:
            self.stmt(s, block)

    def s_DeclBuffer(self, st, block):
        b = st.buffer
        p = self.placement(b)
        if p is None and b.scope in ("local", "local.var"):  # made by a lowering here (simt gemm)
            from tilelang.backend.cuda.plan.kernel import local_placement
            p = self.plan.placements[id(b)] = local_placement(b)
        if p.kind == "smem":
            return
        if p.kind == "mbar":
            return self._declare_mbarriers(b)
        name = self.names.new(b, b.name) if self.names.get(id(b)) is None else self.buf_name(b)
        ct = ctype(b.dtype)
        if p.kind == "view":
            base = b.alias_of
            bp = self.placement(base)
            if bp is not None and bp.kind == "acc":
                return   # only column-group reductions name it (layout/fragment.py group_reduce)
            if bp is not None and bp.kind in ("row", "tile"):
                raise NotImplementedError(f"a view of the register accumulator `{base.name}`")
            addr = f"&{self.buf_name(base)}" if bp is not None and bp.kind == "var" else self.buf_name(base)
            self.w(f"{ct}* {name} = ({ct}*)({addr});")
            return
        if p.kind == "pointer":   # T.make_tensor(address, ...): the tensor at that address
            t = "unsigned char" if is_packed(b) else ct
            self.w(f"{t}* {name} = ({t}*)({self.expr(b.data_ptr)});")
            return
        if p.kind in REGISTER_FRAGMENT_KINDS:
            self.w(f"{ct} {name}[{p.acc.regs}];")
        elif p.kind == "var":
            if b.init is not None:
                self.w(f"{ct} {name} = {cast_str(b.init.dtype, b.dtype, self.expr(b.init))};")
            else:
                self.w(f"{ct} {name}{{}};")   # value-initialised: zero for every element type
        elif p.kind == "local":
            n = 1
            for d in b.shape:
                n *= E.const_int_value(d)
            # extern code may read it through wider types (T.access_ptr)
            align = "__align__(16) " if id(b) in self.addressed() or id(b) in self.vector_locals() else ""
            self.w(f"{align}{ct} {name}[{n}];")
        else:
            raise NotImplementedError(f"T.alloc_global inside a kernel (`{b.name}`): allocate it at "
                                      f"function level")

    def _declare_mbarriers(self, b):
        """T.alloc_barrier: mbarriers in shared memory (after the buffers, plan.py),
        initialised by the range's first thread and made visible (to the copy engine
        too) before anyone arrives."""
        name = self.names.new(b, b.name)
        counts = getattr(b, "arrive_counts", None) or [1] * E.const_int_value(b.shape[0])
        off = self.placement(b).offset   # plan.py: after the other shared buffers
        self.w(f"unsigned long long* {name} = reinterpret_cast<unsigned long long*>(tl_smem + {off});")
        inits = " ".join(f"tl::mbar_init(&{name}[{i}], {c});" for i, c in enumerate(counts))
        self.w(f"if (tl_tid == 0) {{ {inits} tl::mbar_init_fence(); }}")
        if self.plan.cluster_barrier_init:   # other blocks multicast to them (a T.tma_copy's cluster_mask)
            self.w("tl::cluster_sync();")
        else:
            self.sync()

    def addressed(self):
        """ids of the buffers whose element addresses the kernel takes (T.access_ptr)."""
        if self._addressed is None:
            from tilelang.ir.visitor import walk
            out = set()

            def f(n):
                ld = E.addressed_load(n)
                if ld is not None:
                    out.add(id(ld.buffer))
            walk(self.launch.body, f)
            self._addressed = out
        return self._addressed

    def vector_locals(self):
        """Per-thread arrays that vectorized copies move whole vectors of (ops/vector_copy.py)."""
        if getattr(self, "_vector_locals", None) is None:
            from tilelang.backend.cuda.ops.vector_copy import vector_locals
            self._vector_locals = vector_locals(self.launch.body)
        return self._vector_locals

    def _guard(self, block, st):
        """Block-level stores to shared/global memory happen once, on thread 0."""
        return block and self.barriers.single_thread(st)

    def s_BufferStore(self, st, block):
        upd = shared_reducer_update(st, self.placement(st.buffer))
        if upd is not None:   # a reducer in shared memory: every contribution is an atomic
            kind, other = upd
            t = ctype(st.buffer.dtype)
            line = f"{atomic_helper(kind, False)}(&{self.access(st)}, ({t})({self.expr(other)}));"
            self.w(f"if (tl_tid == 0) {{ {line} }}" if self._guard(block, st) else line)
            return
        val = self.expr(st.value)
        if st.value.dtype is not st.buffer.dtype:
            val = cast_str(st.value.dtype, st.buffer.dtype, val)
        if is_packed(st.buffer):
            line = (f"tl::store4<{ctype(st.buffer.dtype)}>({self.buf_name(st.buffer)}, "
                    f"(long long)({self.flat(st.buffer, st.indices)}), {val});")
        else:
            line = f"{self.access(st)} = {val};"
        self.w(f"if (tl_tid == 0) {{ {line} }}" if self._guard(block, st) else line)

    def s_Evaluate(self, st, block):
        v = st.value
        if is_import_source(st):  # its text goes before the kernels (codegen.py)
            return
        from tilelang.ir.mbarrier import every_thread_call
        from tilelang.ir.async_copy import is_cp_async
        if every_thread_call(v):
            self.w(sync_call(self, v))
            return
        if is_cp_async(v) and self.plan.user_cp_async:
            # the kernel waits for its copies itself (cp.async groups or mbarriers)
            a = v.args
            from tilelang.backend.cuda.ops.cp_async import cp_async_line
            self.w(cp_async_line(a[2].value, self.expr(a[0]), self.expr(a[1]), self.expr(a[3])) + ";")
            return
        if isinstance(v, E.Call) and v.name.startswith("atomic_") and v.args and \
                isinstance(v.args[0], E.BufferLoad):
            line = self.printer.atomic(v, ret=False) + ";"   # the previous value unused
        else:
            line = f"(void)({self.expr(v)});"
        self.w(f"if (tl_tid == 0) {{ {line} }}" if self._guard(block, st) else line)

    def s_For(self, st, block):
        form = copy_form(st)   # plan/copy_forms.py; None: a nest laid out by its registers, or not a copy's
        if st.kind == S.PARALLEL and cooperative(self.plan, st, block):   # analysis/block_level.py
            if form is not None and form.kind == "per_thread":
                raise AssertionError("CUDA codegen: a nest plan_copy_forms planned per-thread runs at block level")
            if form is not None and form.kind in ("tma_store", "tma_load"):   # bulk copies of tiles
                emit = self._emit_tma_store if form.kind == "tma_store" else self._emit_tma_load_sync
                if not emit(self, st, form.eviction):
                    raise AssertionError(f"CUDA codegen: the copy planned as {form} does not match its nest")
                return
            if getattr(form, "kind", None) == "cp_async" and not self.async_copy:   # issued by a pipeline
                self.async_copy = True
                try:
                    return self.cooperative(st)
                finally:
                    self.async_copy = False
            return self.cooperative(st)
        info = pipeline_of(self.plan, st, block)
        if info is not None:
            return self.pipelined(st, info)
        inner_block = body_block(self.plan, st, block)
        if st.kind == S.VECTORIZED and form is not None and form.kind == "atomic_lanes":
            from tilelang.backend.cuda.ops.vector_atomic import emit_lanes
            return emit_lanes(self, st, inner_block, form.width)   # T.atomic_addx{n}: one vector atomic
        # per-thread vectorized copies and element-wise statements; a block-level one
        # runs on thread 0, as vectors too
        if st.kind == S.VECTORIZED and (not inner_block or self.barriers.thread_dependent(st.body)) and \
                self._vectorized_copy(st):
            return
        if st.kind == S.VECTORIZED and inner_block and not self.async_copy and \
                not self.barriers.thread_dependent(st.body) and \
                self._guard(True, _guarded_store(st.body)) and self._vectorized_copy(st, "if (tl_tid == 0) "):
            return
        v = self.bind(st.var)
        ct = ctype(st.var.dtype)
        if st.kind in (S.UNROLL, S.VECTORIZED):
            factor = st.annotations.get("pragma_unroll_factor") if st.annotations else None
            self.w(f"#pragma unroll {factor}" if factor else "#pragma unroll")
        elif st.kind == S.SERIAL and self._indexes_registers(st):
            self.w("#pragma unroll")   # register slots chosen by the loop variable: constants once unrolled
        elif st.kind in (S.SERIAL, S.PIPELINED) and st.annotations.get(ROLLED):
            self.w("#pragma unroll 1")   # plan/rolled_loops.py: ptxas must not merge its HGMMAs across iterations
        if st.step is None:
            self.w(f"for ({ct} {v} = {self.expr(st.min)}; {v} < {self.expr(simplify(st.min + st.extent))}; ++{v}) {{")
        else:
            k = self.names.fresh("tl_k")
            self.w(f"for ({ct} {k} = 0; {k} < {self.expr(st.extent)}; ++{k}) {{")
            self.indent += 1
            self.w(f"const {ct} {v} = {self.expr(st.min)} + {k} * {self.expr(st.step)};")
            self.indent -= 1
        self.indent += 1
        self.stmt(st.body, inner_block)
        self.indent -= 1
        self.w("}")

    def _vectorized_copy(self, st, head=""):
        """`for i in T.vectorized(n): dst[.., i] = src[.., i]` as vector loads and stores
        (16 bytes at most) where alignment provably holds (ops/vector_copy.py); False to leave
        the loop to the scalar path."""
        from tilelang.backend.cuda.ops.vector_copy import emit_vector_copy
        form = copy_form(st)   # the width plan/copy_forms.py chose; none: element by element
        if form is None or form.kind != "vector":
            return False
        V = form.width
        k = self.names.fresh("tl_v")
        ct = ctype(st.var.dtype)
        if head:
            self.w(head + "{")
            self.indent += 1
        self.w("#pragma unroll")
        self.w(f"for ({ct} {k} = 0; {k} < {E.const_int_value(st.extent) // V}; ++{k}) {{")
        self.indent += 1
        self.w(f"const {ct} {self.bind(st.var)} = {k} * {V};")
        emit_vector_copy(self, st.body, V, st.var)
        self.indent -= 1
        self.w("}")
        if head:
            self.indent -= 1
            self.w("}")
        return True

    def s_IfThenElse(self, st, block):
        sides = branch_sides(self.plan, st, self.range)
        if sides is not None:
            return self._ranged_if(st, sides, block)
        inner = body_block(self.plan, st, block)
        self.w(f"if ({self.expr(st.cond)}) {{")
        self.indent += 1
        self.stmt(st.then_body, inner)
        self.indent -= 1
        if st.else_body is not None:
            self.w("} else {")
            self.indent += 1
            self.stmt(st.else_body, inner)
            self.indent -= 1
        self.w("}")

    def _ranged_if(self, st, sides, block):
        """`if tx < 128:`-style branches: each side runs on its range of threads as if
        the block had only those (`tl_tid` counts from the range's first thread)."""
        saved = self.range, self.plan.nthreads
        for head, (body, rng) in zip(("if ({}) {{".format(self.expr(st.cond)), "} else {"), sides):
            self.w(head)
            self.indent += 1
            self.range, self.plan.nthreads = rng, rng.size
            if rng != saved[0] and rng.lo != saved[0].lo:
                self.w(f"const int tl_tid = (int)threadIdx.x - {rng.lo};   // threads {rng.lo}..{rng.hi - 1}")
            self.stmt(body, block)
            self.range, self.plan.nthreads = saved
            self.indent -= 1
        self.w("}")

    def s_While(self, st, block):
        inner = body_block(self.plan, st, block)
        self.w(f"while ({self.expr(st.cond)}) {{")
        self.indent += 1
        self.stmt(st.body, inner)
        self.indent -= 1
        self.w("}")

    def s_Break(self, st, block):
        self.w("break;")

    def s_Continue(self, st, block):
        self.w("continue;")

    def s_LetStmt(self, st, block):
        self.w("{")
        self.indent += 1
        self.w(f"const {ctype(st.var.dtype)} {self.bind(st.var)} = {self.expr(st.value)};")
        self.stmt(st.body, block)
        self.indent -= 1
        self.w("}")

    def s_ProducerWarpgroup(self, st, block):
        """The producer warpgroup of a warp-specialized loop (plan/warp_specialized_ring.py):
        its threads run the body and leave; from here on only the user's threads run, and
        every block barrier of theirs is their named barrier (`sync`)."""
        from tilelang.backend.cuda.analysis.thread_ranges import ThreadRange
        # the warpgroup index broadcast from lane 0: ptxas then knows the branch does not
        # diverge inside a warp; with `tl_tid >= lo` it serialized every wgmma of a consumer
        # body that holds its own branches (C7518, "WG.DP in divergent path": attention backward)
        self.w(f"if (__shfl_sync(0xffffffffu, tl_tid >> 7, 0) >= {st.lo // 128}) {{   "
               f"// the producer warpgroup (plan/warp_specialize.py)")
        self.indent += 1
        saved, self.range = self.range, ThreadRange(st.lo, st.lo + 128)
        self.stmt(st.body, False)
        self.range = saved
        self.w("return;")
        self.indent -= 1
        self.w("}")
        self.ws_consumer = True

    def s_StageSlot(self, st, block):
        """A software pipeline's ring slot (plan/cp_async_pipeline.py): its buffers print as
        pointers to slot `st.slot` inside the body."""
        with self.slot_buffers(st.buffers, self.expr(st.slot)):
            self.stmt(st.body, block)

    # the TMA ring's statements (plan/tma_ring_pipeline.py, ir/tma_ring.py): ops/tma_pipeline.py prints them
    def s_TmaRingAlloc(self, op, block):
        tma_ring.emit_ring_alloc(self, op)

    def s_TmaPrefetchDescriptors(self, op, block):
        tma_ring.emit_prefetch_descriptors(self, op)

    def s_TmaRingLoad(self, op, block):
        tma_ring.emit_ring_load(self, op)

    def s_TmaPrefetchL2(self, op, block):
        tma_ring.emit_prefetch_l2(self, op)

    def s_TmaRingInvalidate(self, op, block):
        tma_ring.emit_ring_invalidate(self, op)

    def s_ThreadAllReduce(self, st, block):
        emit_thread_allreduce(self, st, block)

    def s_FinalizeReducer(self, op, block):
        emit_finalize_reducer(self, op)

    def s_Barrier(self, st, block):
        if is_inserted_barrier(st):   # plan/sync.py's insert_barriers (always at block level)
            if block:
                if st.fence_async_proxy and getattr(st, "fence_when", None) is not None:   # plan/proxy_fences.py
                    self.w(f"if ({self.expr(st.fence_when)}) tl::fence_proxy_async();")
                elif st.fence_async_proxy:
                    self.w("tl::fence_proxy_async();")
                self.sync(fence=False)
            return
        if st.kind == "warp":
            self.w(f"__syncwarp({self.expr(st.mask)});")
            return
        if st.barrier_id is None:
            self.sync()
            return
        # named barrier: bar.sync id[, count] (count: the threads that take part)
        if self.plan.fence_barriers:
            self.w("tl::fence_proxy_async();")
        args = [st.barrier_id] + ([] if st.arrive_count is None else [st.arrive_count])
        self.w(f"tl::__sync_thread_partial({', '.join(f'(int)({self.expr(a)})' for a in args)});")

    def s_Assume(self, st, block):
        # the promise the passes relied on, passed on to the CUDA compiler
        self.w(f"__builtin_assume({self.expr(st.cond)});")

    def s_Assert(self, st, block):
        msg = str(st.message).replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
        self.w(f"if (!({self.expr(st.cond)})) {{ printf(\"device assert failed: {msg} "
               f"(block %d,%d,%d thread %d)\\n\", (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, "
               f"tl_tid); __trap(); }}")

    def s_Print(self, st, block):
        msg = str(st.msg or "").replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
        obj = st.obj
        guard = "if (tl_tid == 0) " if self._guard(block, st) else ""
        if isinstance(obj, Buffer):
            p = self.placement(obj)
            if p is not None and p.kind in REGISTER_FRAGMENT_KINDS:
                self.w(f"// T.print of the register fragment `{obj.name}` is not supported yet")
                return
            n = 1
            for d in obj.shape:
                n *= E.const_int_value(d) or 1
            name = self.buf_name(obj)
            idx = name if p is not None and p.kind == "var" else f"{name}[tl_p]"
            self.w(f"{guard}for (int tl_p = 0; tl_p < {n}; ++tl_p) printf(\"{msg} {obj.name}[%d] = %f\\n\", "
                   f"tl_p, (double)(float)({idx}));")
            return
        fmt, val = ("%lld", f"(long long)({self.expr(obj)})") if not obj.dtype.is_float else \
            ("%f", f"(double)(float)({self.expr(obj)})")
        self.w(f"{guard}printf(\"{msg} {fmt} (block %d,%d,%d thread %d)\\n\", {val}, (int)blockIdx.x, "
               f"(int)blockIdx.y, (int)blockIdx.z, tl_tid);")

    def s_KernelLaunch(self, st, block):
        raise NotImplementedError("nested T.Kernel")

    # tile ops ----------------------------------------------------------------------
    def _require_block_level(self, op, what):
        """Tile ops that split their work among all of the block's threads cannot run in
        a branch that only some threads take: they would silently compute part of it."""
        from tilelang.ir.errors import LoweringError
        raise LoweringError(
            f"{what} inside a branch on the thread index (or another per-thread context): "
            f"the whole block computes a tile op together, so only part of it would be done",
            getattr(op, "span", None),
            hint="move it out of the `if tx < ...` branch; for producer/consumer roles use "
                 "T.Pipelined (or T.ws scopes), whose schedule the compiler derives")

    def s_Gemm(self, op, block):
        if not block:
            self._require_block_level(op, "T.gemm")
        cfg = self.plan.gemms.get(id(op))
        if cfg is None:   # plan/copy_forms.py put its SIMT loop in its place
            raise AssertionError(f"CUDA codegen: T.gemm at {getattr(op, 'span', None)} has no tensor-core form and "
                                 f"was not replaced by its SIMT loop (plan_copy_forms did not run)")
        ta, tb = "true" if op.trans_A else "false", "true" if op.trans_B else "false"
        if getattr(cfg, "kind", "mma") == "wgmma":
            # a gemm chained to the next one (plan/kernel.py, plan/wgmma_waits.py), or one whose wait a
            # pipelining pass wrote into the IR (plan/tma_ring_wgmma.py), leaves its group in flight
            chained = id(op) in self.plan.chained_gemms
            issue_only = chained or bool(op.annotations.get(TO.ISSUE_ONLY))
            call = self.wgmma_call(op, cfg, issue_only=issue_only, acc="{acc}")
            self._gemm_call(op, cfg, call)
            if issue_only:
                if chained:
                    self.__dict__.setdefault("_wgmma_in_flight", []).append((op, cfg))
                return
            in_flight = self.__dict__.setdefault("_wgmma_in_flight", [])
            # this gemm's wait completed the groups in flight before it: their accumulators
            # are final only from here (the compiler must not read them earlier)
            fenced = {id(op.C.buffer)}
            for g, c in in_flight:
                if id(g.C.buffer) not in fenced:
                    fenced.add(id(g.C.buffer))
                    self.w(f"tl::fence_regs<{c.slabs * c.inst_n // 2}>({self.buf_name(g.C.buffer)});")
            in_flight.clear()
            return

        def ptr(r):
            p = self.placement(r.buffer)
            if p is not None and p.swizzle:
                # a (strip) tile in a wgmma operand's layout: from its first element, its strip stride
                assert p.row_slabs == 1, "mma.sync reading a tile in wgmma slab order"
                rows = E.const_int_value(r.buffer.shape[-2])
                return self.wgmma_operand(r), str(rows * p.swizzle // r.buffer.dtype.itemsize)
            return f"{self.buf_name(r.buffer)} + {self.flat(r.buffer, r.starts)}", \
                self.expr(E.convert(self.strides(r.buffer)[-2]))
        (pa, lda), (pb, ldb) = ptr(op.A), ptr(op.B)
        sw = [getattr(self.placement(r.buffer), "swizzle", 0) or 0 for r in (op.A, op.B)]
        sw = f", {sw[0]}, {sw[1]}" if any(sw) else ""
        call = (f"tl::gemm_ss<{cfg.M}, {cfg.N}, {cfg.K}, {cfg.WM}, {cfg.WN}, {ta}, {tb}{sw}>"
                f"({pa}, {lda}, {pb}, {ldb}, {{acc}}, tl_tid);")
        if getattr(cfg, "k32", False):   # fp8: A M x K, B N x K (gemm_lowering.mma_config)
            call = (f"tl::gemm_ss_k32<{cfg.M}, {cfg.N}, {cfg.K}, {cfg.WM}, {cfg.WN}>"
                    f"({pa}, {lda}, {pb}, {ldb}, {{acc}}, tl_tid);")
        if cfg.a_regs and not cfg.tf32:   # a 16-bit A in registers, the accumulator pattern (ops/mma.py)
            swb = getattr(self.placement(op.B.buffer), "swizzle", 0) or 0
            call = (f"tl::gemm_rs<{cfg.M}, {cfg.N}, {cfg.K}, {cfg.WM}, {cfg.WN}, {tb}{f', {swb}' if swb else ''}>"
                    f"({self.buf_name(op.A.buffer)}, {pb}, {ldb}, {{acc}}, tl_tid);")
        if getattr(cfg, "tf32", False):   # float32 / tfloat32 operands (ops/mma.py MmaTf32Config)
            chains = f", {cfg.chains}" if cfg.chains > 1 else ""   # ops/mma.py tf32_chains
            call = (f"tl::gemm_ss_tf32<{cfg.M}, {cfg.N}, {cfg.K}, {cfg.WM}, {cfg.WN}, {ta}, {tb}{chains}>"
                    f"({pa}, {lda}, {pb}, {ldb}, {{acc}}, tl_tid);")
            if cfg.a_regs:   # A in registers (layout/fragment.py Tf32ALayout)
                call = (f"tl::gemm_rs_tf32<{cfg.M}, {cfg.N}, {cfg.K}, {cfg.WM}, {cfg.WN}, {tb}{chains}>"
                        f"({self.buf_name(op.A.buffer)}, {pb}, {ldb}, {{acc}}, tl_tid);")
        return self._gemm_call(op, cfg, call)

    def wgmma_call(self, op, cfg, issue_only=False, acc=None):
        """The C++ statement running wgmma gemm `op` on the buffers its operands are named
        by now (ring slots included): `tl::wgmma_gemm_{ss,rs}` issues and waits,
        `tl::wgmma_{ss,rs}_issue` only issues and commits the group."""
        t = ctype(op.A.buffer.dtype)
        ta, tb = ("true" if x else "false" for x in (op.trans_A, op.trans_B))
        a, b = self.wgmma_operand(op.A), self.wgmma_operand(op.B)
        acc = acc or self.buf_name(op.C.buffer)
        if cfg.a_regs:
            fn = "wgmma_rs_issue" if issue_only else "wgmma_gemm_rs"
            slabs = f", {cfg.slabs}" if cfg.slabs > 1 else ""
            return f"tl::{fn}<{cfg.M}, {cfg.N}, {cfg.K}, {tb}, {t}{slabs}>({a}, {b}, {acc}, tl_tid);"
        fn = "wgmma_ss_issue" if issue_only else "wgmma_gemm_ss"
        wgn = f", {cfg.WN}" if cfg.WN > 1 else ""   # warpgroups along N
        if (cfg.swizzle_a, cfg.swizzle_b, cfg.slabs) != (128, 128, 1):   # a 32- or 16-wide K-major operand,
            wgn = f", {cfg.WN}, {cfg.swizzle_a}, {cfg.swizzle_b}"           # several slabs per warpgroup
            wgn += f", {cfg.slabs}" if cfg.slabs > 1 else ""
        if cfg.dtype_b:   # fp8 e4m3 x e5m2: B's element type closes the list
            wgn = f", {cfg.WN}, {cfg.swizzle_a}, {cfg.swizzle_b}, {cfg.slabs}, {ctype(op.B.buffer.dtype)}"
        return f"tl::{fn}<{cfg.M}, {cfg.N}, {cfg.K}, {ta}, {tb}, {t}{wgn}>({a}, {b}, {acc}, tl_tid);"

    def wgmma_operand(self, r):
        """The pointer a wgmma reads operand region `r` from: its buffer, or, for a strip
        tile inside it (a slot of a [stages, R, C] buffer, a column range: ops/wgmma.py
        `strip_tile`), the buffer plus the tile's first element."""
        name = self.buf_name(r.buffer)
        p = self.placement(r.buffer)
        if p is None or p.kind != "smem" or not p.swizzle or all(E.const_int_value(x) == 0 for x in r.starts):
            return name   # a register A fragment, or a whole tile
        off = simplify(operand_offset(r))
        return name if E.const_int_value(off) == 0 else f"{name} + {self.expr(off)}"

    def _gemm_call(self, op, cfg, call):
        cp = self.placement(op.C.buffer)
        if cp.kind == "acc":
            self.w(call.format(acc=self.buf_name(op.C.buffer)))
            return
        # accumulator in shared memory: through registers for the mma
        L = cfg.layout()
        c = op.C
        row, col = E.Var("tl_row"), E.Var("tl_col")
        self.names.alias(row, f"{L}::row(tl_tid, tl_r)")
        self.names.alias(col, f"{L}::col(tl_tid, tl_r)")
        idx = list(c.starts)
        idx[-2] = simplify(idx[-2] + row)
        idx[-1] = simplify(idx[-1] + col)
        cel = self.access(E.BufferLoad(c.buffer, idx))
        acc_dt = DataType(getattr(cfg, "acc", "float32"))
        cast_in = cast_str(c.buffer.dtype, acc_dt, cel)
        self.w("{")
        self.w(f"  {ctype(acc_dt)} tl_acc[{cfg.regs}];")
        self.w("  #pragma unroll")
        self.w(f"  for (int tl_r = 0; tl_r < {cfg.regs}; ++tl_r) tl_acc[tl_r] = {cast_in};")
        self.w("  " + call.format(acc="tl_acc"))
        self.w("  #pragma unroll")
        self.w(f"  for (int tl_r = 0; tl_r < {cfg.regs}; ++tl_r) {cel} = "
               f"{cast_str(acc_dt, c.buffer.dtype, 'tl_acc[tl_r]')};")
        self.w("}")

    def s_Reduce(self, op, block):
        if not block:
            self._require_block_level(op, f"T.reduce_{op.kind}")
        form = op.annotations.get(REDUCE_FORM)   # plan/reduce_forms.py
        if form is None:
            raise AssertionError(f"CUDA codegen: T.reduce_{op.kind} has no form (plan_reduce_forms did not run, "
                                 f"or a reduction on partial warps was not replaced by its loop)")
        if form.kind == "per_thread":
            lines = emit_local_reduce(self, op)
        elif form.kind == "column_groups":
            base = op.src.buffer.alias_of
            lines = emit_group_reduce(self, op, group_reduce(op, self.placement(base).acc), base)
        elif form.kind == "registers":
            lines = emit_register_reduce(self, op, self.placement(op.src.buffer).acc)
        elif form.kind == "thread_tile":
            lines = emit_tile_reduce(self, op, self.placement(op.src.buffer).acc)
        else:
            lines = emit_warp_reduce(self, op, form)
        for line in lines:
            self.w(line)

    def s_Fill(self, op, block):
        # lower_tile_ops makes every T.fill a nest (pipeline.py KEEP_TILE_OPS keeps none), which
        # plan_copy_forms gives its form: code generation only prints
        raise AssertionError("CUDA codegen: a T.fill tile op reached the printer (lower_tile_ops keeps none)")

    def s_Copy(self, op, block):
        from tilelang.transform.lower_tile_ops import lower_copy
        bar = op.annotations.get("tma_barrier")
        # a T.tma_copy that plan/copy_forms.py issues as bulk copies on its mbarrier (its other
        # T.tma_copy ops are copy nests in the IR by now)
        form = op.annotations.get(COPY_FORM)
        if form is not None and form.kind == "cp_async_mbarrier":
            emit_copy_on_mbarrier(self, lower_copy(op), bar, form, op.annotations.get(THREAD_SPLIT))
            return
        if form is not None:
            if not emit_tma_copy(self, op, lower_copy(op), bar):
                raise AssertionError(f"CUDA codegen: the T.tma_copy planned as {op.annotations[COPY_FORM]} "
                                     f"does not match TMA")
            return
        raise AssertionError("CUDA codegen: a T.copy tile op that plan_copy_forms did not plan "
                             f"({'a T.tma_copy' if bar is not None else 'lower_tile_ops keeps only T.tma_copy'})")

    def s_Atomic(self, op, block):
        # only `use_tma` atomics reach the codegen, those plan/copy_forms.py issues in bulk
        # (backend/cuda/ops/tma_reduce.py); it made the others their threads' atomics
        from tilelang.backend.cuda.ops.tma_reduce import emit_tma_reduce
        form = getattr(op, "annotations", {}).get(COPY_FORM)
        if form is None or not emit_tma_reduce(self, op, block):
            raise AssertionError(f"CUDA codegen: the use_tma atomic planned as {form} does not match a tensor map")

    def s_WarpMmaLoad(self, op, block):
        from tilelang.backend.cuda.ops.warp_mma import emit_load
        emit_load(self, op)

    def s_WarpMma(self, op, block):
        from tilelang.backend.cuda.ops.warp_mma import emit_mma
        emit_mma(self, op)

    def s_WarpMmaStore(self, op, block):
        from tilelang.backend.cuda.ops.warp_mma import emit_store
        emit_store(self, op)

    # parallel loops --------------------------------------------------------------------
    def cooperative(self, st):
        vars_, mins, exts, body = parallel_nest(st)
        regs = self._accs_in(body)
        if regs and self.placement(regs[0]).kind == "tile":
            if emit_tile_loop(self, vars_, mins, exts, body, regs, copy_form(st), register_chunks(st)):
                return
        elif regs:
            return self.fragment_loop(vars_, body, regs, exts, copy_form(st))
        nt = self.plan.nthreads
        from tilelang.backend.cuda.ops.vector_copy import emit_vector_copy, iterations, vector_extents
        form = copy_form(st)
        if form is None:   # every cooperative nest not laid out by its registers has its form by now
            raise AssertionError("CUDA codegen: a cooperative nest has no form (plan_copy_forms did not reach it)")
        if form.kind == "registers":
            raise AssertionError(f"CUDA codegen: the nest planned as {form} is not laid out by its registers")
        # the width plan/copy_forms.py chose, the split plan/thread_splits.py chose
        V, eviction = form.width, form.eviction
        if thread_split_of(st) is None:
            raise AssertionError(f"CUDA codegen: the nest planned as {form} has no thread split "
                                 f"(plan_thread_splits did not reach it)")
        how, n = thread_split_of(st)
        exts = vector_extents(exts, V)
        total = iterations(exts)
        tc = E.const_int_value(total)
        it = self.names.fresh("tl_i")
        split = None   # exact split: the flat index is j * c + t, t = tl_tid / (extents done) < c
        staged = st.annotations.get(STAGED)   # (half, tag): plan/cp_async_pipeline.py, a converting copy
        stage = None
        if staged is not None:
            from tilelang.backend.cuda.ops.vector_copy import staged_vector_type
            if how != "exact" or not V:
                raise AssertionError("CUDA codegen: a staged copy needs an exact, vectorized thread split")
            half, tag = staged
            if half == "load":   # the thread's vectors, held in registers until the store half
                self.staged_arrays[tag] = self.names.fresh("tl_stage")
                self.w(f"{staged_vector_type(body, V)} {self.staged_arrays[tag]}[{n}];")
            half = "load" if half == "reload" else half   # (reload: into the same registers)
        if how != "strided":   # fully unrolled; "guarded": the last copy checks the bound
            j = self.names.fresh("tl_j")
            self.w("#pragma unroll")
            self.w(f"for (int {j} = 0; {j} < {n}; ++{j}) {{")
            self.indent += 1
            split = (j, nt, "tl_tid")
            if staged is not None:
                stage = (half, self.staged_arrays[staged[1]], j)
        else:
            if n:
                self.w("#pragma unroll")
            self.w(f"for (int {it} = tl_tid; {it} < {self.expr(total)}; {it} += {nt}) {{")
            self.indent += 1
        rem = it
        lines = []
        for k in reversed(range(len(vars_))):
            ext, mn = self.expr(exts[k]), self.expr(mins[k])
            off = "" if E.const_int_value(mins[k]) == 0 else f" + {mn}"
            ct = ctype(vars_[k].dtype)
            scale = f" * {V}" if V and k == len(vars_) - 1 else ""
            e = E.const_int_value(exts[k])
            if k and split is not None and e and split[1] % e == 0:
                # (j * c + t) % e == t % e and / e == j * (c / e) + t / e when e divides c:
                # the same expression in every unrolled copy, which nvcc computes once
                jv, c, t = split
                lines.append(f"const {ct} {self.bind(vars_[k])} = (({t}) % {ext}){scale}{off};")
                split = (jv, c // e, f"(({t}) / {ext})")
                continue
            if split is not None:
                jv, c, t = split
                rem = it if t == "tl_tid" and c == nt else f"({jv} + {t})" if c == 1 else f"({jv} * {c} + {t})"
                split = None
            if k:
                lines.append(f"const {ct} {self.bind(vars_[k])} = (({rem}) % {ext}){scale}{off};")
                rem = f"(({rem}) / {ext})"
            else:
                lines.append(f"const {ct} {self.bind(vars_[k])} = ({rem}){scale}{off};")
        if how != "strided" and any(it in ln for ln in lines):
            self.w(f"const int {it} = {j} * {nt} + tl_tid;")
        for ln in lines:
            self.w(ln)
        if how == "guarded":   # only the last copy can run past the end: `j < n - 1` folds away in the others
            last = f"{j} < {n - 1} || " if n > 1 else ""
            self.w(f"if ({last}{j} * {nt} + tl_tid < {tc}) {{")
            self.indent += 1
        waited = form.kind == "cp_async_wait" and not self.async_copy
        if waited:   # plan/copy_forms.py: all of this thread's copies in flight, then one wait
            self.async_copy = True
        if V or eviction:
            emit_vector_copy(self, body, V or 1, vars_[-1], eviction, stage, form.in_bounds)
        else:
            self.stmt(body, False)
        if how == "guarded":
            self.indent -= 1
            self.w("}")
        self.indent -= 1
        self.w("}")
        if waited:
            self.async_copy = False
            self.w("tl::cp_async_commit();")
            self.w("tl::cp_async_wait<0>();")

    def fragment_loop(self, vars_, body, regs, exts=None, form=None):
        """A T.Parallel nest over register fragments (layout/fragment.py checked that
        it indexes them by its loop variables): each thread runs the slots it holds;
        a 2-D nest follows the accumulator layout, a 1-D nest the row layout. A 2-D nest
        over a leading window of the accumulator (layout/fragment.py window_of) skips the
        slots outside it. `form` `registers xW` (plan/copy_forms.py): W columns per store
        (ops/register_store.py)."""
        from tilelang.backend.cuda.ops.register_store import accumulator_window
        L, window, shift = accumulator_window(vars_, exts, body, regs, self.placement)
        # an M x 4 nest reading a TF32 A fragment at [i, e + j] runs on the slots of its
        # Tf32ColsLayout tile (layout/fragment.py _residue_source)
        cols = [x for x in (self.placement(b).acc for b in regs) if isinstance(x, Tf32ColsLayout)]
        residue = {id(b): self.placement(b).acc for b in regs if isinstance(self.placement(b).acc, Tf32ALayout)} \
            if cols else {}
        if cols:
            L = cols[0]
        lt = L.layout()
        slot = self.names.fresh("tl_r")
        if form is not None and form.kind == "registers" and form.width:
            return self._packed_store(vars_, body, regs, L, lt, slot, form.width)
        acc = isinstance(L, TILE_2D)
        self.w("#pragma unroll")
        self.w(f"for (int {slot} = 0; {slot} < {L.regs}; ++{slot}) {{")
        self.indent += 1
        sub = (lambda d: f" - ({self.expr(shift[d])})") if shift else (lambda d: "")
        axis = "col" if isinstance(L, ColLayout) else "row"   # a 1-D nest over a column vector
        self.w(f"const int {self.bind(vars_[0])} = {lt}::{axis}(tl_tid, {slot}){sub(0)};")
        if acc:
            self.w(f"const int {self.bind(vars_[1])} = {lt}::col(tl_tid, {slot}){sub(1)};")
        if shift:
            i, j = self.names[vars_[0]], self.names[vars_[1]]
            self.w(f"if ({i} < 0 || {i} >= {L.M} || {j} < 0 || {j} >= {L.N}) continue;")
        elif window:
            bounds = [f"{self.names[v]} >= {self.expr(e)}" for v, e, w in zip(vars_, exts, window) if w]
            self.w(f"if ({' || '.join(bounds)}) continue;")
        for b in regs:
            if id(b) in residue:
                self.acc_index[id(b)] = self._residue_slot(residue[id(b)], slot, vars_)
            else:
                self.acc_index[id(b)] = self._vector_slot(b, lt, slot) if acc else slot
        self.stmt(body, False)
        for b in regs:
            del self.acc_index[id(b)]
        self.indent -= 1
        self.w("}")

    def _indexes_registers(self, st):
        """A constant-extent serial loop whose variable indexes a register fragment
        (the k8 atom of a TF32 A fragment, say): register arrays must not be indexed at
        run time (local memory)."""
        if E.const_int_value(st.extent) is None or (E.const_int_value(st.extent) or 0) > 128:
            return False
        from tilelang.ir.visitor import walk
        found = []

        def f(n):
            if found or not isinstance(n, (E.BufferLoad, S.BufferStore)):
                return
            p = self.placement(n.buffer)
            if p is not None and p.kind in REGISTER_FRAGMENT_KINDS and \
                    any(v is st.var for i in n.indices for v in collect_vars(i)):
                found.append(n)
        walk(st.body, f)
        return bool(found)

    def _residue_slot(self, A, slot, vars_):
        """The register of TF32 A fragment `A` holding [i, e + j] in a nest over its
        Tf32ColsLayout tile, i and j this thread's row and column of `slot` (a callable of
        the access's indices: e, a multiple of 4, selects the k8 atom and its half)."""
        def at(idx):
            e = residue_offset(list(idx), vars_)
            assert e is not None, "TF32 A fragment read off its residue form"
            return A.slot_of(slot, self.expr(e))
        return at

    def _packed_store(self, vars_, body, regs, L, lt, slot, width):
        """The accumulator stored `width` columns per instruction, as plan/copy_forms.py
        chose (ops/register_store.py): pairs as one 32-bit store or vector atomic, fp8 in
        fours (`_quad_store`)."""
        from tilelang.backend.cuda.ops import vector_atomic
        from tilelang.backend.cuda.ops.register_store import split_store
        guard, st, atomic = split_store(body)
        G, iv, jv = st.buffer, vars_[0], vars_[1]
        if id(G) in self.param_bufs:   # the launch checks the pointer's alignment
            self.aligned[G.name] = max(self.aligned.get(G.name, 1), width * G.dtype.itemsize)
        if width == 4:
            return self._quad_store(st, guard, regs, L, lt, slot, iv, jv)
        self.w("#pragma unroll")
        pair = self.names.fresh("tl_pair")
        self.w(f"for (int {pair} = 0; {pair} < {L.regs // 2}; ++{pair}) {{")
        self.indent += 1
        self.w(f"const int {slot} = 2 * {pair};")
        i, j = self.bind(iv), self.bind(jv)
        self.w(f"const int {i} = {lt}::row(tl_tid, {slot});")
        self.w(f"const int {j} = {lt}::col(tl_tid, {slot});")
        # float values: store_pair converts both at once (one F2FP); an atomic takes the tensor's type
        vals = [self._acc_value(st, regs, lt, slot, e, jv, j, keep_float=atomic is None) for e in (0, 1)]
        self._bind_acc(regs, lt, slot)
        if atomic is not None:
            line = vector_atomic.call_line(self, atomic[1], 2, self.access(st), vals)
        else:
            line = f"tl::store_pair(&{self.access(st)}, {vals[0]}, {vals[1]});"
        self.w(f"if ({self.expr(guard)}) {{ {line} }}" if guard is not None else line)
        for b in regs:
            del self.acc_index[id(b)]
        self.indent -= 1
        self.w("}")

    def _bind_acc(self, regs, lt, r):
        """Read the fragments in `regs` at register `r` (a C expression)."""
        for b in regs:
            self.acc_index[id(b)] = self._vector_slot(b, lt, r)

    def _vector_slot(self, b, lt, r):
        """The slot of fragment `b` read at register `r` of accumulator layout `lt`: the
        register itself, or for a row / column vector the slot of r's row / column."""
        kind = self.placement(b).kind
        return f"{lt}::row_slot({r})" if kind == "row" else f"{lt}::col_slot({r})" if kind == "col" else r

    def _acc_value(self, st, regs, lt, slot, e, jv, j, row=None, guard=None, keep_float=True):
        """The stored value of register `slot` + e, whose column is j + e % 2 (C text) and,
        given `row` = (iv, its C text), whose row is that: a float stays a float (the store
        helper converts two at once), other types are cast to the tensor's. With `guard`,
        the value is read only where the guard holds for that element (0 elsewhere)."""
        G = st.buffer
        self._bind_acc(regs, lt, slot if e == 0 else f"({slot} + {e})")
        val = st.value
        if isinstance(val, E.Cast) and val.dtype is G.dtype and val.value.dtype.name == "float32":
            val = val.value
        binds = [(jv, j if e % 2 == 0 else f"({j} + 1)")] + ([row] if row is not None else [])
        with self.names.bound_all(binds):
            v = self.expr(val)
            cond = self.expr(guard) if guard is not None else None
        v = v if val.dtype is G.dtype or keep_float and val.dtype.name == "float32" else cast_str(val.dtype, G.dtype, v)
        if cond is not None:
            zero = "0.0f" if val.dtype.name == "float32" else f"{ctype(G.dtype)}(0.0f)"
            v = f"(({cond}) ? {v} : {zero})"
        return v

    def _quad_store(self, st, guard, regs, L, lt, slot, iv, jv):
        """fp8 accumulator stores, four columns per 32-bit store: registers r .. r + 3
        (r % 4 = 0) hold columns c, c + 1 of row R and of row R + 8, and lanes 2t, 2t + 1
        of a quad hold neighbouring column pairs; one shuffle (tl::fp8_quad_word) gives the
        even lane row R's four bytes and the odd lane row R + 8's. The whole warp runs the
        loop (an accumulator loop does); the store alone is guarded."""
        G = st.buffer
        self.w("#pragma unroll")
        quad = self.names.fresh("tl_quad")
        self.w(f"for (int {quad} = 0; {quad} < {L.regs // 4}; ++{quad}) {{")
        self.indent += 1
        self.w(f"const int {slot} = 4 * {quad};")
        self.w("const int tl_odd = tl_tid & 1;")
        # the values read their registers' own rows (R for r, r + 1; R + 8 for r + 2, r + 3)
        own, top, low = (self.names.fresh(n) for n in ("tl_col", "tl_row", "tl_row8"))
        self.w(f"const int {own} = {lt}::col(tl_tid, {slot});")
        self.w(f"const int {top} = {lt}::row(tl_tid, {slot});")
        self.w(f"const int {low} = {lt}::row(tl_tid, {slot} + 2);")
        # every lane computes its four values before the shuffle: a guarded store's loads
        # (an epilogue's scales, say) are guarded one by one, as the scalar loop would
        reads = guard is not None and _reads_memory(st.value)
        vals = [self._acc_value(st, regs, lt, slot, e, jv, own, (iv, top if e < 2 else low), guard if reads else None)
                for e in range(4)]
        word = self.names.fresh("tl_word")
        self.w(f"const unsigned {word} = tl::fp8_quad_word<{ctype(G.dtype)}>({', '.join(vals)}, tl_odd);")
        i, j = self.bind(iv), self.bind(jv)
        self.w(f"const int {i} = tl_odd ? {low} : {top};")
        self.w(f"const int {j} = {own} - 2 * tl_odd;")
        self._bind_acc(regs, lt, slot)
        line = f"*reinterpret_cast<unsigned*>(&{self.access(st)}) = {word};"
        self.w(f"if ({self.expr(guard)}) {{ {line} }}" if guard is not None else line)
        for b in regs:
            del self.acc_index[id(b)]
        self.indent -= 1
        self.w("}")
        return True

    # software pipelining ------------------------------------------------------------------
    def pipelined(self, st, info):
        """A T.Pipelined loop left to the printer: every schedule is in the IR already (the
        passes pipeline_cp_async, pipeline_tma_ring), so the CUDA pass pipeline did not run."""
        # the copies' form (plan/copy_forms.py): all on the TMA ring, or all cp.async
        ring = all(getattr(copy_form(c), "kind", None) == "tma_ring" for c in info.copies)
        tmas = tma_copies(self, info) if ring else None
        if ring and tmas is None:
            raise AssertionError("CUDA codegen: copies planned for the TMA ring do not match it")
        return self._not_scheduled(st, tmas is not None)

    def _not_scheduled(self, st, ring=False):
        how = ("the TMA ring, whose schedule the pass pipeline_tma_ring (plan/tma_ring_pipeline.py)" if ring else
               "cp.async, whose schedule the pass pipeline_cp_async (plan/cp_async_pipeline.py)")
        raise AssertionError(f"CUDA codegen: the T.Pipelined loop over `{st.var.name}` runs on {how} writes "
                             f"into the IR; lower it with the CUDA pass pipeline (backend/cuda/pipeline.py)")

    @contextlib.contextmanager
    def slot_buffers(self, bufs, slot):
        """Inside the block, each ring buffer of `bufs` prints as a pointer to ring slot
        `slot` (a C expression), declared here."""
        binds = []
        for b in bufs:
            base = self.buf_name(b)
            pl = self.placement(b)
            name = self.names.fresh(base + "_slot")
            ct = ctype(b.dtype)
            self.w(f"{ct}* {name} = {base} + ({slot}) * {pl.stage_bytes // b.dtype.itemsize};")
            binds.append((b, name))
        with self.names.bound_all(binds):
            yield

    def _accs_in(self, body):
        from tilelang.ir.visitor import walk
        out = {}

        def f(n):
            if isinstance(n, (E.BufferLoad, S.BufferStore)):
                p = self.placement(n.buffer)
                if p is not None and p.kind in REGISTER_FRAGMENT_KINDS:
                    out[id(n.buffer)] = n.buffer
        walk(body, f)
        return list(out.values())


_REDUCER_ATOMICS = {"+": "add", "max": "max", "min": "min", "&": "and", "|": "or", "^": "xor"}


def shared_reducer_update(st, placement):
    """(atomic kind, contribution) when `st` is `acc[i] = acc[i] op v` on a T.alloc_reducer
    buffer that lives in shared memory (no register layout suits its updates): the
    threads' contributions then meet in one copy, each added atomically."""
    from tilelang.ir.printer import Printer
    buf = st.buffer
    if getattr(buf, "reducer_op", None) is None or placement is None or placement.kind != "smem":
        return None
    v = st.value
    while isinstance(v, E.Cast) and v.dtype is buf.dtype:
        v = v.value
    if not isinstance(v, E.BinOp) or v.op not in _REDUCER_ATOMICS:
        return None
    key = Printer().expr
    want = key(E.BufferLoad(buf, st.indices))
    for mine, other in ((v.a, v.b), (v.b, v.a)):
        if isinstance(mine, E.BufferLoad) and mine.buffer is buf and key(mine) == want:
            return _REDUCER_ATOMICS[v.op], other
    return None
