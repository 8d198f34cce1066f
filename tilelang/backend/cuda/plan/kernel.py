"""Where each buffer of a kernel lives, and how each gemm runs.

Every `shared` buffer lives in dynamic shared memory, and so does every fragment
that layout/fragment.py leaves without a register layout. `local`/`var` buffers are per-thread arrays; views (`T.view`,
`T.reshape`) are pointers to their base buffer's storage. Shared rows that feed
ldmatrix are padded by 16 bytes so that the 8 row addresses of one ldmatrix hit
distinct banks; shared operands of wgmma take the 128-byte swizzle (`tl::sw128`,
1024-byte aligned) instead. Shared buffers filled by a pipelined loop's async
copies get one slot per stage (plan/pipeline.py).

Register fragments: gemm accumulators, what their T.Parallel loops, copies and
reductions reach, and the row statistics (layout/fragment.py). A wgmma whose A operand is a
register fragment reads it from registers (`tl::wgmma_gemm_rs`; set
TILELANG_CUDA_WGMMA_RS=0 to stage it through shared memory instead)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir import warp_ops as W
from tilelang.ir.errors import located
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.analysis.facts import thread_dependent_vars
from tilelang.backend.cuda.ops.mma import mma_config
from tilelang.backend.cuda.ops.wgmma import wgmma_config, swizzle_ok
from tilelang.backend.cuda.plan.pipeline import find_pipelines
from tilelang.backend.cuda.layout.fragment import AccLayout, infer as infer_fragment_layouts, format_report
from tilelang.backend.cuda.options import CudaOptions
from tilelang.backend.cuda.layout.tile import TILE_LAYOUTS, ThreadTile
from tilelang.backend.cuda.analysis.thread_ranges import find_regions
from tilelang.backend.cuda.ops.reduce import round_rows

SMEM_ALIGN = 128


@dataclass
class Placement:
    kind: str                 # param | workspace | smem | local | var | acc | row | tile | view | mbar
    strides: list = None      # element strides used to flatten indices
    offset: int = 0           # byte offset into dynamic shared memory (smem)
    acc: object = None        # AccLayout (acc) | RowLayout (row): layout/fragment.py;
                              # ThreadTile | TileRows | TileCols | Scalar (tile): layout/tile.py
    swizzle: bool = False     # smem in the tl::sw128 layout (wgmma operand)
    stages: int = 1           # slots of a pipelined buffer (smem)
    stage_bytes: int = 0      # bytes between slots


@dataclass
class KernelPlan:
    nthreads: int
    placements: dict = field(default_factory=dict)   # id(buffer) -> Placement
    smem_bytes: int = 0
    gemms: dict = field(default_factory=dict)        # id(Gemm) -> MmaConfig | None
    td_vars: set = field(default_factory=set)
    td_bufs: set = field(default_factory=set)
    depends: object = None                           # expr -> bool (thread-dependent)
    pipelines: dict = field(default_factory=dict)    # id(Pipelined loop) -> PipelineInfo
    uses_wgmma: bool = False
    fragments: object = None                         # fragment_layout.FragmentLayouts
    red_offset: int = 0      # shared scratch of register-tile reductions wider than a warp:
    red_phase_bytes: int = 0  # two phases (alternating reductions need one barrier each)
    notes: list = field(default_factory=list)        # decisions the user should hear about
    regions: object = None                           # thread_ranges.Regions (warp specialization)
    user_cp_async: bool = False   # T.ptx_cp_async completion is the kernel's business (groups, mbarriers)
    sets_max_nreg: bool = False   # T.set_max_nreg: warpgroups reallocate registers
    options: object = None        # options.CudaOptions this plan was made with
    chained_gemms: set = field(default_factory=set)   # id(Gemm): wgmma issued, waited by the next gemm
    fence_barriers: bool = False  # block barriers fence shared memory toward the async proxy (plan/proxy_fences.py)

    def threads_of(self, st) -> int:
        """Threads that run `st` together: the block, or the range of its branch."""
        return self.regions.range_of(st).size if self.regions is not None else self.nthreads


def _const_shape(buf):
    out = []
    for d in buf.shape:
        v = E.const_int_value(d)
        if v is None:
            raise located(NotImplementedError, f"the {buf.scope} buffer `{buf.name}` needs a constant shape "
                          f"on CUDA, got {list(buf.shape)}", span=buf.span,
                          hint="size shared memory and fragments with Python ints or T.const values known "
                               "at compile time; allocate the largest tile and guard the accesses")
        out.append(v)
    return out


def _row_major(shape, pad=0):
    strides, acc = [], 1
    for k, d in enumerate(reversed(shape)):
        strides.append(acc)
        acc *= (d + pad) if k == 0 else d
    return list(reversed(strides)), acc


def local_placement(buf):
    if buf.scope == "local.var":
        return Placement("var", [1])
    return Placement("local", _row_major(_const_shape(buf))[0])


def plan_kernel(launch: S.KernelLaunch, arch, options: CudaOptions | None = None) -> KernelPlan:
    nthreads = 1
    for t in launch.threads:
        nthreads *= int(t)
    plan = KernelPlan(nthreads)
    plan.options = options if options is not None else CudaOptions.from_config(None, arch)
    plan.regions = find_regions(launch)
    from tilelang.ir import mbarrier as M
    waits = {M.CP_ASYNC_ARRIVE, M.CP_ASYNC_WAIT}
    walk(launch.body, lambda n: setattr(plan, "user_cp_async", True)
         if isinstance(n, E.Call) and n.name in waits else None)
    walk(launch.body, lambda n: setattr(plan, "sets_max_nreg", True)
         if isinstance(n, E.Call) and n.name == M.SET_MAX_NREG else None)
    plan.td_vars, plan.td_bufs, plan.depends = thread_dependent_vars(launch.body, launch.thread_vars)
    decls = []
    walk(launch.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    gemms = []
    walk(launch.body, lambda n: gemms.append(n) if isinstance(n, TO.Gemm) else None)

    def unpadded_stride(buf):
        if buf.scope not in ("shared", "local.fragment") or buf.ndim < 2:
            return None
        return E.const_int_value(buf.shape[-1])
    # gemm configs and fragment layouts depend on each other only through wgmma's
    # register A operand: a gemm whose A fragment cannot live in registers reads it
    # from shared memory instead, and the layouts are inferred again.
    shared_a = set() if plan.options.wgmma_rs else {id(g) for g in gemms}
    annotated = {id(b): k for b in decls for k in [_annotated_layout(b, plan)] if k is not None}
    while True:
        swizzled = _gemm_configs(gemms, plan, arch, nthreads, shared_a, unpadded_stride,
                                 {i for i, k in annotated.items() if k == "sw128"})
        frag = infer_fragment_layouts(launch, plan.gemms, plan.depends, plan.regions)
        lost = {id(g) for g in gemms if getattr(plan.gemms[id(g)], "a_regs", False) and
                id(g.A.buffer) not in frag.layouts}
        if not lost:
            break
        shared_a |= lost
    plan.fragments = frag
    if plan.options.dump_fragments:
        import sys
        sys.stderr.write(format_report(frag))
    plan.uses_wgmma = any(getattr(c, "kind", "") == "wgmma" for c in plan.gemms.values())
    if not plan.uses_wgmma:   # hand-written wgmma (language/tensor_core_ptx.py) reads shared memory too
        from tilelang.ir.tensor_core_calls import WGMMA_SS, WGMMA_RS
        hand = []
        walk(launch.body, lambda n: hand.append(n) if isinstance(n, E.Call) and n.name in (WGMMA_SS, WGMMA_RS) else None)
        plan.uses_wgmma = bool(hand)
    padded = set()
    for g in gemms:
        cfg = plan.gemms[id(g)]
        if cfg is not None and getattr(cfg, "kind", "mma") == "mma":
            for r in (g.A, g.B):
                row_bytes = (E.const_int_value(r.buffer.shape[-1]) or 0) * r.buffer.dtype.itemsize
                if row_bytes % 32 == 0:  # an even number of 16-byte chunks: rows collide
                    padded.add(id(r.buffer))
    # the same for the shared operands of warp-level mma loads (ir/warp_ops.py)
    walk(launch.body, lambda n: padded.add(id(n.src.buffer)) if isinstance(n, W.WarpMmaLoad) and
         n.src.buffer.dtype.bits == 16 and n.src.buffer.ndim >= 2 and
         (E.const_int_value(n.src.buffer.shape[-1]) or 0) * 2 % 32 == 0 else None)
    scalar_only = _scalar_only_fragments(launch, decls)
    for buf in decls:   # T.annotate_layout on shared buffers (sw128 ones are in `swizzled` already)
        if annotated.get(id(buf)) == "linear" and id(buf) not in swizzled:
            padded.discard(id(buf))   # (a wgmma operand keeps the swizzle wgmma needs)
    smem = []
    for buf in decls:
        if id(buf) in plan.placements:
            continue
        if getattr(buf, "alias_of", None) is not None:
            plan.placements[id(buf)] = Placement("view", _row_major(_const_shape(buf))[0]
                                                 if buf.scope != "global" else None)
        elif buf.scope in ("local.var", "local"):
            plan.placements[id(buf)] = local_placement(buf)
        elif buf.scope == "shared.barrier":   # T.alloc_barrier: static shared, codegen_kernel
            plan.placements[id(buf)] = Placement("mbar", [1])
        elif buf.scope == "global" and getattr(buf, "data_ptr", None) is not None:
            plan.placements[id(buf)] = Placement("pointer", None)   # T.make_tensor at an address
        elif buf.scope == "global":
            plan.placements[id(buf)] = Placement("workspace", None)
        elif id(buf) in frag.layouts:
            lay = frag.layouts[id(buf)]
            kind = "tile" if isinstance(lay, TILE_LAYOUTS) else "acc" if isinstance(lay, AccLayout) else "row"
            plan.placements[id(buf)] = Placement(kind, None, acc=lay)
        elif buf.scope == "local.fragment" and id(buf) in scalar_only:
            # only scalar code touches it: every thread keeps its own copy (a fully
            # replicated fragment), e.g. indices a producer range prefetches per thread
            plan.placements[id(buf)] = Placement("local", _row_major(_const_shape(buf))[0])
        else:  # shared, shared.dyn, fragments (first stage: in shared memory)
            shape = _const_shape(buf)
            sw = id(buf) in swizzled
            strides, n = _row_major(shape, 16 // buf.dtype.itemsize if id(buf) in padded and not sw else 0)
            plan.placements[id(buf)] = Placement("smem", strides, 0, swizzle=sw,
                                                 stage_bytes=n * buf.dtype.itemsize)
            smem.append(buf)
    # Every shared buffer gets its own storage unless that does not fit: then buffers
    # whose lifetimes do not overlap share storage (at the price of a barrier where it
    # changes hands), and then pipeline stages are dropped.
    always = {id(b): (0, 1 << 30) for b in smem}
    live = always
    mbar_bytes = sum(8 * _mbarrier_count(b) + 8 for b in decls if b.scope == "shared.barrier")
    limit = max_dynamic_smem(arch) - mbar_bytes   # the mbarriers follow the buffers
    cap = None
    while True:
        plan.pipelines = find_pipelines(launch, plan, arch, _vector_width_for(plan), max_stages=cap)
        for buf in smem:
            plan.placements[id(buf)].stages = 1
        for info in plan.pipelines.values():
            for b in info.bufs:
                plan.placements[id(b)].stages = info.stages
        offset = _assign_offsets(smem, plan, live)
        red = _reduce_scratch_bytes(launch, plan)
        if red:
            offset = (offset + SMEM_ALIGN - 1) // SMEM_ALIGN * SMEM_ALIGN
            plan.red_offset, plan.red_phase_bytes = offset, red
            offset += 2 * red
        deepest = max((i.stages for i in plan.pipelines.values()), default=1)
        if offset <= limit:
            break
        if live is always:
            live = _live_ranges(launch, smem, plan.depends)
            continue
        unpad = [b for b in smem if id(b) in padded and not plan.placements[id(b)].swizzle]
        if unpad:
            # the padding only avoids bank conflicts: drop it when that alone makes the
            # buffers fit, or when no pipeline stage is left to give up (one stage fewer
            # with conflict-free loads is the better trade)
            saved = {id(b): (plan.placements[id(b)].strides, plan.placements[id(b)].stage_bytes) for b in unpad}
            for buf in unpad:
                p = plan.placements[id(buf)]
                p.strides, n = _row_major(_const_shape(buf))
                p.stage_bytes = n * buf.dtype.itemsize
            trial = _assign_offsets(smem, plan, live)
            if red:
                trial = (trial + SMEM_ALIGN - 1) // SMEM_ALIGN * SMEM_ALIGN + 2 * red
            if trial <= limit or deepest <= 1:
                padded.difference_update(id(b) for b in unpad)
                plan.notes.append(f"shared buffers {', '.join(b.name for b in unpad)} left unpadded "
                                  f"(bank conflicts possible) so that shared memory fits in {limit} bytes")
                continue
            for buf in unpad:
                plan.placements[id(buf)].strides, plan.placements[id(buf)].stage_bytes = saved[id(buf)]
        if deepest <= 1:
            break
        # Over the device's shared memory: fewer pipeline stages before giving up
        # (num_stages is a performance hint; the caller is told).
        cap = deepest - 1
        plan.notes.append(f"pipeline stages capped at {cap} so that shared memory fits in {limit} bytes")
    # T.alloc_barrier mbarriers go last (8-byte aligned): as static __shared__ arrays they
    # pushed the 1024-aligned dynamic area up by a whole kilobyte
    for buf in decls:
        p = plan.placements.get(id(buf))
        if p is not None and p.kind == "mbar":
            offset = (offset + 7) // 8 * 8
            p.offset = offset
            offset += 8 * _mbarrier_count(buf)
    plan.smem_bytes = offset
    plan.chained_gemms = _chained_wgmma(launch, plan)
    return plan


def _chained_wgmma(launch, plan):
    """ids of wgmma gemms that only issue their group: the next statement is another
    wgmma into the same register accumulator (MLA's Q K^T over the latent part, then over
    the rope part), whose wait completes both groups, so the tensor cores run the two
    back to back. Nothing in between touches the accumulator, and a barrier there (the
    second gemm reads a tile written since) does not disturb the group in flight."""
    out = set()

    def wg(g):
        cfg = plan.gemms.get(id(g)) if isinstance(g, TO.Gemm) else None
        p = plan.placements.get(id(g.C.buffer)) if cfg is not None else None
        return getattr(cfg, "kind", "") == "wgmma" and p is not None and p.kind == "acc"

    def f(n):
        if isinstance(n, S.SeqStmt):
            for a, b in zip(n.stmts, n.stmts[1:]):
                if wg(a) and wg(b) and a.C.buffer is b.C.buffer and _whole_region(a.C) and _whole_region(b.C):
                    out.add(id(a))
    walk(launch.body, f)
    return out


def _whole_region(r):
    return all(E.const_int_value(x) == 0 for x in r.starts) and \
        [E.const_int_value(e) for e in r.extents] == [E.const_int_value(d) for d in r.buffer.shape]


def _mbarrier_count(buf):
    counts = getattr(buf, "arrive_counts", None)
    return len(counts) if counts else (E.const_int_value(buf.shape[0]) or 1)


def max_dynamic_smem(arch) -> int:
    """Bytes of dynamic shared memory one block may opt in to on `arch`."""
    from tilelang.backend.cuda.target import arch_number
    n = arch_number(arch) if arch else 80
    if n >= 90:
        return 227 * 1024
    if n in (80, 87):
        return 163 * 1024
    if n >= 86:
        return 99 * 1024
    if n >= 75:
        return 64 * 1024
    return 48 * 1024


def _buffers_in(node):
    """Root buffers a statement mentions in any way (loads, stores, tile-op regions,
    pointers): conservative, so that a buffer is never thought dead while in use."""
    from tilelang.ir.buffer import Buffer
    found = {}

    def root(b):
        while getattr(b, "alias_of", None) is not None:
            b = b.alias_of
        return b

    def visit(n):
        for v in getattr(n, "__dict__", {}).values():
            for x in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(x, Buffer):
                    found[id(root(x))] = True
                elif x is not None and hasattr(x, "buffer") and isinstance(getattr(x, "buffer"), Buffer):
                    found[id(root(x.buffer))] = True
    walk(node, visit)
    return found


def _live_ranges(launch, smem, depends):
    """{id(buf): (first, last)} over the kernel body's statements in program order,
    descending into sequences, `let`s and block-uniform `if`s (where plan/sync.py can
    put a barrier between two statements) but not into loops: a buffer used inside a
    loop is live for the whole loop. One never mentioned is never live."""
    units = []

    def flat(st):
        if isinstance(st, S.SeqStmt):
            for x in st.stmts:
                flat(x)
        elif isinstance(st, S.LetStmt):
            units.append(S.Evaluate(st.value))
            flat(st.body)
        elif isinstance(st, S.IfThenElse) and not depends(st.cond):
            units.append(S.Evaluate(st.cond))
            flat(st.then_body)
            flat(st.else_body)
        elif st is not None and not isinstance(st, S.DeclBuffer):
            units.append(st)
    flat(launch.body)
    first, last = {}, {}
    for i, u in enumerate(units):
        for b in _buffers_in(u):
            first.setdefault(b, i)
            last[b] = i
    # a buffer the body never mentions needs no storage of its own
    return {id(b): (first.get(id(b), -1), last.get(id(b), -1)) for b in smem}


def _assign_offsets(smem, plan, live):
    """Place shared buffers, largest first, at the lowest offset that no buffer with an
    overlapping lifetime occupies (buffers used by disjoint top-level statements share
    space; plan/sync.py puts a barrier where one's storage passes to the next)."""
    placed = []   # (lo, hi, first, last)
    order = sorted(smem, key=lambda b: -plan.placements[id(b)].stage_bytes * plan.placements[id(b)].stages)
    end = 0
    for buf in order:
        p = plan.placements[id(buf)]
        align = 1024 if p.swizzle else SMEM_ALIGN
        p.stage_bytes = (p.stage_bytes + align - 1) // align * align
        size = p.stage_bytes * p.stages
        a, z = live[id(buf)]
        busy = sorted((lo, hi) for lo, hi, f, l in placed if not (l < a or z < f))
        off = 0
        for lo, hi in busy:
            if off + size <= lo:
                break
            off = max(off, (hi + align - 1) // align * align)
        p.offset = off
        placed.append((off, off + size, a, z))
        end = max(end, off + size)
    return end


def _annotated_layout(buf, plan):
    """"sw128" or "linear" for a shared buffer whose T.annotate_layout we can keep (the
    layout maps every element exactly as tl::sw128 does, 16-bit tiles, or as the
    unpadded row-major layout), None when there is none; other layouts are noted and
    ignored (the compiler picks the layout)."""
    lay = getattr(buf, "layout", None)
    if lay is None or not buf.scope.startswith("shared") or buf.ndim != 2:
        return None
    import numpy as np
    rows, cols = (E.const_int_value(d) for d in buf.shape)
    try:
        off = np.asarray(lay.offsets(), dtype=np.int64)
    except Exception:  # noqa: BLE001 - a layout we cannot evaluate is one we cannot keep
        off = None
    if off is not None and rows and cols and off.shape == (rows, cols):
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        if (off == r * cols + c).all():
            return "linear"
        sw = (c >> 6) * (rows * 64) + r * 64 + ((((c >> 3) ^ r) & 7) << 3) + (c & 7)   # tl::sw128
        if swizzle_ok(buf) and (off == sw).all():
            return "sw128"
    return None   # a layout we do not keep: the compiler chooses one (README)


def _scalar_only_fragments(launch, decls):
    """ids of fragments that no T.Parallel loop and no tile op touches."""
    frags = {id(b) for b in decls if b.scope == "local.fragment" and getattr(b, "alias_of", None) is None}
    if not frags:
        return set()
    shared_out = set()

    def mark(node):
        walk(node, lambda m: shared_out.add(id(m.buffer)) if isinstance(m, (E.BufferLoad, S.BufferStore)) else None)

    def f(n):
        if isinstance(n, S.For) and n.kind == S.PARALLEL:
            mark(n)
        elif isinstance(n, (TO.TileOp, W.WarpMmaLoad, W.WarpMma, W.WarpMmaStore)) or \
                type(n).__name__ in ("ThreadAllReduce", "FinalizeReducer"):
            mark(n)
            shared_out.update(id(v.buffer) for v in vars(n).values() if hasattr(v, "buffer"))
            shared_out.update(id(v) for v in vars(n).values() if hasattr(v, "scope"))
        elif isinstance(n, S.Print) and hasattr(n.obj, "scope"):
            shared_out.add(id(n.obj))
    walk(launch.body, f)
    return frags - shared_out


def _reduce_scratch_bytes(launch, plan):
    """Bytes per phase of the cross-warp exchange of register-tile reductions."""
    need = 0

    def f(n):
        nonlocal need
        if isinstance(n, TO.Reduce):
            p = plan.placements.get(id(n.src.buffer))
            if p is not None and p.kind == "tile" and isinstance(p.acc, ThreadTile) and p.acc.group > 32:
                item = max(4, n.dst.buffer.dtype.itemsize)
                b = plan.nthreads // 32 * round_rows(plan.nthreads // 32, p.acc.row_regs, item) * item
                need = max(need, (b + 15) // 16 * 16)
            elif p is not None and p.kind == "acc" and getattr(p.acc, "WN", 1) > 1:
                # one partial per row and warp column (reduce_lowering.emit_register_reduce)
                b = p.acc.M * p.acc.WN * max(4, n.dst.buffer.dtype.itemsize)
                need = max(need, (b + 15) // 16 * 16)
    walk(launch.body, f)
    return need


def _vector_width_for(plan):
    """vector_width as the codegen computes it, over this plan's placements."""
    from tilelang.backend.cuda.ops.vector_copy import vector_width

    class _View:
        def placement(self, buf):
            return plan.placements.get(id(buf))

        def strides(self, buf):
            p = self.placement(buf)
            return p.strides if p is not None and p.strides is not None else buf.get_strides()
    view = _View()
    return lambda vars_, mins, exts, body: vector_width(view, vars_, mins, exts, body)


def _as_shared_view(g):
    """Gemm operands that are fragments live in shared memory in this stage, so the
    tensor-core path may read them like shared buffers."""
    class V:
        pass
    v = V()
    v.__dict__.update(g.__dict__)
    import copy
    for name in ("A", "B"):
        r = getattr(g, name)
        if r.buffer.scope == "local.fragment":
            r2 = copy.copy(r)
            b2 = copy.copy(r.buffer)
            b2.scope = "shared"
            r2.buffer = b2
            setattr(v, name, r2)
    return v


def _gemm_configs(gemms, plan, arch, nthreads, shared_a, unpadded_stride, forced=()):
    """Fill plan.gemms; returns the ids of shared buffers that take the sw128 layout
    (`forced`: those whose annotated layout it is). A wgmma with a fragment A reads it
    from registers unless its gemm is in `shared_a`. A gemm that cannot use wgmma but
    shares an operand with one that does would fall back to the SIMT loop (ldmatrix
    cannot read the swizzled tile): then the wgmma gemms it shares buffers with use
    mma.sync too (MLA decode with block_N = 32: the P V gemm's 32-column P)."""
    no_wgmma = set()
    while True:
        swizzled, blocked = _gemm_configs_once(gemms, plan, arch, shared_a, unpadded_stride, forced, no_wgmma)
        if not blocked:
            return swizzled
        # every wgmma gemm connected to a blocked one through an operand or the
        # accumulator (whose layout the gemms writing it must agree on)
        ops = {id(g): {id(g.A.buffer), id(g.B.buffer), id(g.C.buffer)} for g in gemms}
        bufs = set().union(*(ops[id(g)] for g in blocked))
        grown = set(no_wgmma)
        while True:
            more = {id(g) for g in gemms if getattr(plan.gemms[id(g)], "kind", "") == "wgmma" and
                    id(g) not in grown and bufs & ops[id(g)]}
            if not more:
                break
            grown |= more
            bufs = bufs.union(*(ops[i] for i in more))
        if grown == no_wgmma:
            return swizzled
        no_wgmma = grown


def _gemm_configs_once(gemms, plan, arch, shared_a, unpadded_stride, forced, no_wgmma):
    """One round of _gemm_configs: (swizzled buffer ids, the gemms left to the SIMT
    loop only because an operand has wgmma's swizzle)."""
    swizzled, for_wgmma, blocked = set(forced), set(), []
    for g in gemms:
        cfg = None if id(g) in no_wgmma else wgmma_config(g, arch, plan.threads_of(g))
        if cfg is not None and cfg.a_regs and (id(g) in shared_a or cfg.WN > 1):
            # the fragment lives in shared memory: read A as a shared tile (also when
            # warpgroups split N: each would need all of A's rows and columns)
            cfg = None if g.trans_A or not swizzle_ok(g.A.buffer) or cfg.K % 64 else \
                dataclasses.replace(cfg, a_regs=False)
        if cfg is not None:
            for_wgmma.add(id(g.B.buffer))
            if not cfg.a_regs:
                for_wgmma.add(id(g.A.buffer))
        plan.gemms[id(g)] = cfg
    swizzled |= for_wgmma
    for g in gemms:
        if plan.gemms[id(g)] is None:
            cfg = mma_config(_as_shared_view(g), arch, plan.threads_of(g), unpadded_stride)
            both = {id(g.A.buffer), id(g.B.buffer)} & swizzled
            if cfg is not None and both and not both & for_wgmma:
                swizzled -= both   # an annotated swizzle gives way to the tensor cores' own layout
            elif cfg is not None and both:
                cfg = None   # ldmatrix addressing assumes row-major rows; the SIMT loop handles any layout
                blocked.append(g)
            plan.gemms[id(g)] = cfg
    return swizzled, blocked
