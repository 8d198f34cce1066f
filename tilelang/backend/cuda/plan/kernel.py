"""Where each buffer of a kernel lives, and how each gemm runs.

Every `shared` buffer lives in dynamic shared memory, and so does every fragment
that layout/fragment.py leaves without a register layout. `local`/`var` buffers are per-thread arrays; views (`T.view`,
`T.reshape`) are pointers to their base buffer's storage. Shared rows that feed
ldmatrix are padded by 16 bytes so that the 8 row addresses of one ldmatrix hit
distinct banks; shared operands of wgmma take the 128-byte swizzle (`tl::sw128`,
1024-byte aligned) instead, or the 64- / 32-byte one for a K-major operand 32 / 16
columns wide (ops/wgmma.py swizzle_bytes), with the rows of an A tile in `tl::slab_row`
order when one warpgroup computes several 64-row slabs. Shared buffers filled by a pipelined loop's async
copies get one slot per stage (plan/pipeline.py).

Register fragments: gemm accumulators, what their T.Parallel loops, copies and
reductions reach, and the row statistics (layout/fragment.py). A wgmma whose A operand is a
register fragment reads it from registers (`tl::wgmma_gemm_rs`; set
TILELANG_CUDA_WGMMA_RS=0 to stage it through shared memory instead)."""
from __future__ import annotations

import warnings

import dataclasses
from dataclasses import dataclass, field

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir import warp_ops as W
from tilelang.ir.errors import located
from tilelang.ir.visitor import walk
from tilelang.ir.thread_dependence import thread_dependent_vars
from tilelang.backend.cuda.ops.mma import mma_config, tf32_chains
from tilelang.backend.cuda.ops.wgmma import wgmma_config, wgmma_refusal, swizzle_ok, swizzle_bytes, strip_tile
from tilelang.backend.cuda.plan.pipeline import find_pipelines
from tilelang.backend.cuda.layout.fragment import TILE_2D, ColLayout, infer as infer_fragment_layouts, format_report
from tilelang.backend.cuda.layout.shared import annotated_shared_layout
from tilelang.backend.cuda.options import CudaOptions
from tilelang.backend.cuda.layout.annotated import AnnotatedTile
from tilelang.backend.cuda.layout.tile import TILE_LAYOUTS, ThreadTile
from tilelang.backend.cuda.analysis.thread_ranges import find_regions
from tilelang.backend.cuda.ops.reduce import round_rows

SMEM_ALIGN = 128


@dataclass
class Placement:
    kind: str                 # param | workspace | smem | local | var | acc | row | col | tile | view | mbar
    strides: list = None      # element strides used to flatten indices
    offset: int = 0           # byte offset into dynamic shared memory (smem)
    acc: object = None        # AccLayout (acc) | RowLayout (row) | ColLayout (col): layout/fragment.py;
                              # ThreadTile | TileRows | TileCols | Scalar (tile): layout/tile.py
    swizzle: int = 0          # smem in the tl::sw128 / sw64 / sw32 layout (wgmma operand): its bytes
    layout: object = None     # smem: a user's Layout every access goes through (layout/shared.py;
                              # `strides` then only encode its vector runs)
    annotated: str = ""       # what became of the buffer's T.annotate_layout (plan report)
    stages: int = 1           # slots of a pipelined buffer (smem)
    row_slabs: int = 1        # swizzled rows stored in tl::slab_row<row_slabs> order (WgmmaConfig.slabs)
    stage_bytes: int = 0      # bytes between slots


def smem_range(plan, buf):
    """The bytes [lo, hi) of dynamic shared memory that `buf`'s storage occupies in `plan`, or
    None when it is not in shared memory (a view: its storage's)."""
    from tilelang.ir.buffer import storage_root
    p = plan.placements.get(id(storage_root(buf)))
    if p is None or p.kind != "smem":
        return None
    return p.offset, p.offset + p.stage_bytes * p.stages


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
    smem_shared_for_occupancy: str = ""   # why buffers share storage though they fit apart (plan report only)
    regions: object = None                           # thread_ranges.Regions (warp specialization)
    user_cp_async: bool = False   # T.ptx_cp_async completion is the kernel's business (groups, mbarriers)
    sets_max_nreg: bool = False   # T.set_max_nreg: warpgroups reallocate registers
    options: object = None        # options.CudaOptions this plan was made with
    chained_gemms: set = field(default_factory=set)   # id(Gemm): wgmma only issued (plan/wgmma_waits.py)
    wgmma_waits_before: dict = field(default_factory=dict)   # id(stmt) -> WgmmaWait printed before it
    wgmma_waits_after: dict = field(default_factory=dict)    # id(stmt) -> WgmmaWait printed after it
    fence_barriers: bool = False  # block barriers fence shared memory toward the async proxy (plan/proxy_fences.py)
    warp_specialized: object = None   # plan/warp_specialize.py: WarpSpecialization of the pipelined loop
    warp_specialize_why: str = ""     # why the kernel's pipelined loop is not warp-specialized
    loop_ranges: dict = field(default_factory=dict)   # id(loop Var) -> (lo, hi) of constant-bound loops
    wgmma_requested: list = field(default_factory=list)   # the gemms written T.wgmma_gemm
    wgmma_lost: dict = field(default_factory=dict)    # id(Gemm) -> why a gemm wgmma_config accepts runs
                                                      # in another form (T.wgmma_gemm's error says it)
    cluster_barrier_init: bool = False   # a T.tma_copy multicasts to the cluster: the block barrier after
                                         # the mbarriers' initialization is a cluster barrier (plan/copy_forms.py)

    def threads_of(self, st) -> int:
        """Threads that run `st` together: the block, or the range of its branch."""
        return self.regions.range_of(st).size if self.regions is not None else self.nthreads


def wgmma_into_registers(plan, g) -> bool:
    """Whether T.gemm `g` runs on wgmma into a register accumulator (its planned form): what
    a producer warpgroup asks of a loop's gemms (plan/warp_specialize.py, plan/copy_forms.py)."""
    p = plan.placements.get(id(g.C.buffer))
    return getattr(plan.gemms.get(id(g)), "kind", "") == "wgmma" and getattr(p, "kind", "") == "acc"


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


def plan_kernel(launch: S.KernelLaunch, arch, options: CudaOptions | None = None, mma_only=False) -> KernelPlan:
    """The kernel's plan. When wgmma's operand and accumulator layouts make the shared
    buffers overflow (the published sparse MLA backward: two of its gemms on wgmma keep their
    accumulators in shared memory) while mma.sync for every gemm fits, the mma.sync plan
    (`mma_only`) is taken and the plan says so."""
    plan = _plan_kernel(launch, arch, options, mma_only)
    limit = max_dynamic_smem(arch)
    requested = getattr(plan, "wgmma_requested", ())   # T.wgmma_gemm: wgmma or an error, never the mma.sync plan
    if not mma_only and plan.uses_wgmma and plan.smem_bytes > limit and not requested:
        alt = _plan_kernel(launch, arch, options, True)
        if alt.smem_bytes <= limit:
            alt.notes.append(f"gemms on mma.sync: with wgmma's layouts the shared buffers need {plan.smem_bytes} "
                             f"bytes, more than the {limit} one block may use")
            return alt
    for g in requested:
        _check_wgmma_request(g, plan, arch)
    return plan


def _check_wgmma_request(g, plan, arch):
    """A gemm written `T.wgmma_gemm` runs as a wgmma. Where the hardware has none for it (a
    target without wgmma, or a tile whose rows do not make 64-row slabs: the published
    package rejects those too) the kernel is rejected with the reason; where only this
    planner has no wgmma form for it (ops/wgmma.py wgmma_refusal, KernelPlan.wgmma_lost) it
    runs on the tensor cores' mma.sync form, with a warning and a plan note saying why
    (the published package runs those on wgmma: same result, another speed)."""
    if getattr(plan.gemms.get(id(g)), "kind", "") == "wgmma":
        return
    from tilelang.ir.errors import TargetFeatureError
    why = wgmma_refusal(g, arch, plan.threads_of(g), plan.loop_ranges) or plan.wgmma_lost.get(id(g)) or \
        "the kernel plan gave it another form"
    from tilelang.backend.cuda.ops.wgmma import gemm_mnk
    mnk = gemm_mnk(g)
    hardware = arch is None or not arch.startswith("sm_90a") or mnk is None or mnk[0] % 64
    if not hardware and plan.gemms.get(id(g)) is not None:
        import warnings
        note = (f"T.wgmma_gemm({g.A.buffer.name}, {g.B.buffer.name}, {g.C.buffer.name}) runs on mma.sync: {why}")
        plan.notes.append(note)
        warnings.warn(note, stacklevel=2)
        return
    raise TargetFeatureError(
        f"T.wgmma_gemm({g.A.buffer.name}, {g.B.buffer.name}, {g.C.buffer.name}) cannot run as a warpgroup MMA: "
        f"{why}", getattr(g, "span", None),
        hint="write T.gemm to let the compiler choose the tensor-core form (mma.sync where wgmma does not apply)")


def _plan_kernel(launch, arch, options, mma_only):
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
    plan.loop_ranges = _loop_ranges(launch.body)
    plan.wgmma_requested = [g for g in gemms if g.annotations.get(TO.WGMMA)]

    def unpadded_stride(buf):
        if buf.scope not in ("shared", "local.fragment") or buf.ndim < 2:
            return None
        return E.const_int_value(buf.shape[-1])
    # gemm configs and fragment layouts depend on each other only through wgmma's
    # register A operand: a gemm whose A fragment cannot live in registers reads it
    # from shared memory instead, and the layouts are inferred again.
    shared_a = set() if plan.options.wgmma_rs else {id(g) for g in gemms}
    annotated = {id(b): a for b in decls for a in [annotated_shared_layout(b)] if a is not None}
    # layouts the gemms must read as annotated (a swizzle of the public family on a
    # tensor-core operand gives way to that path's own operand layout instead: below)
    pinned = {i: a for i, a in annotated.items() if a.kind != "sw128" and a.swizzle.is_none()}
    while True:
        swizzled = _gemm_configs(gemms, plan, arch, nthreads, shared_a, unpadded_stride,
                                 {i for i, a in annotated.items() if a.kind == "sw128"}, pinned,
                                 no_wgmma={id(g) for g in gemms} if mma_only else set())
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
    if plan.options.pad_atomic_staging:
        padded |= _atomic_staging_tiles(launch, decls, gemms, annotated, frag)
    scalar_only = _scalar_only_fragments(launch, decls)
    kept, gave_way = _kept_annotations(decls, annotated, gemms, plan, swizzled)
    swizzled |= _store_staging_tiles(launch, decls, gemms, annotated, plan, arch)
    padded.difference_update(kept)
    gave_way.update(_check_fragment_annotations(decls, frag, plan, gemms))
    slab_rows = {id(g.A.buffer): plan.gemms[id(g)].slabs for g in gemms
                 if getattr(plan.gemms[id(g)], "slabs", 1) > 1}
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
        elif id(buf) in kept:
            a = kept[id(buf)]
            plan.placements[id(buf)] = Placement("smem", list(a.strides), 0, layout=a.layout if a.kind == "custom"
                                                 else None, annotated=a.describe(),
                                                 stage_bytes=a.size * buf.dtype.itemsize)
            smem.append(buf)
        elif id(buf) in frag.layouts:
            lay = frag.layouts[id(buf)]
            kind = "tile" if isinstance(lay, TILE_LAYOUTS + (AnnotatedTile,)) else "acc" if isinstance(lay, TILE_2D) \
                else "col" if isinstance(lay, ColLayout) else "row"
            plan.placements[id(buf)] = Placement(kind, None, acc=lay, annotated=gave_way.get(id(buf), ""))
        elif buf.scope == "local.fragment" and id(buf) in scalar_only:
            # only scalar code touches it: every thread keeps its own copy (a fully
            # replicated fragment), e.g. indices a producer range prefetches per thread
            plan.placements[id(buf)] = Placement("local", _row_major(_const_shape(buf))[0])
        else:  # shared, shared.dyn, fragments (first stage: in shared memory)
            shape = _const_shape(buf)
            sw = swizzle_bytes(buf) if id(buf) in swizzled else 0
            strides, n = _row_major(shape, 16 // buf.dtype.itemsize if id(buf) in padded and not sw else 0)
            note = gave_way.get(id(buf)) or (annotated[id(buf)].describe() if sw and id(buf) in annotated else "")
            plan.placements[id(buf)] = Placement("smem", strides, 0, swizzle=sw, annotated=note,
                                                 stage_bytes=n * buf.dtype.itemsize,
                                                 row_slabs=slab_rows.get(id(buf), 1) if sw else 1)
            smem.append(buf)
    # Every shared buffer gets its own storage unless that does not fit: then buffers
    # whose lifetimes do not overlap share storage (at the price of a barrier where it
    # changes hands), and then pipeline stages are dropped.
    always = {id(b): (0, 1 << 30) for b in smem}
    live = always
    if plan.options.smem_share_always:
        # a test mode (the fuzzer's): every buffer shares storage wherever lifetimes allow, so
        # the lifetimes and the barriers where storage changes hands run on every program
        live = _live_ranges(launch, smem, plan.depends)
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
        red = _reduce_scratch_bytes(launch, plan)
        plan.red_offset, offset = _with_scratch(_assign_offsets(smem, plan, live), red)
        plan.red_phase_bytes = red
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
            trial = _with_scratch(_assign_offsets(smem, plan, live), red)[1]
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
    if live is always and plan.options.smem_sharing_occupancy:
        offset = _share_for_occupancy(launch, smem, plan, arch, offset, red, mbar_bytes)
    # T.alloc_barrier mbarriers go last (8-byte aligned): as static __shared__ arrays they
    # pushed the 1024-aligned dynamic area up by a whole kilobyte
    for buf in decls:
        p = plan.placements.get(id(buf))
        if p is not None and p.kind == "mbar":
            offset = (offset + 7) // 8 * 8
            p.offset = offset
            offset += 8 * _mbarrier_count(buf)
    plan.smem_bytes = offset
    from tilelang.backend.cuda.plan.wgmma_waits import schedule as wgmma_wait_schedule, hoist_wgmma
    hoist_wgmma(launch, plan)   # issue order inside loops (before the barriers are planned)
    plan.chained_gemms, plan.wgmma_waits_before, plan.wgmma_waits_after = wgmma_wait_schedule(launch, plan)
    return plan


def _loop_ranges(body):
    """id(loop variable) -> (lo, hi), inclusive, of the loops with constant bounds: the
    operand of a gemm in a `T.unroll` loop over K tiles may start at `j * 64` (ops/wgmma.py
    strip_tile)."""
    out = {}

    def f(n):
        if isinstance(n, S.For) and n.step is None:
            lo, ext = E.const_int_value(n.min), E.const_int_value(n.extent)
            if lo is not None and ext is not None and ext > 0:
                out[id(n.var)] = (lo, lo + ext - 1)
    walk(body, f)
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
        # the node itself (a load inside an expression: expression nodes have __slots__, no
        # __dict__, so a parent's attributes do not show it) and what its attributes name
        # (a tile op's regions, a store's buffer, pointers)
        for v in [n] + list(getattr(n, "__dict__", {}).values()):
            for x in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(x, Buffer):
                    found[id(root(x))] = True
                elif x is not None and isinstance(getattr(x, "buffer", None), Buffer):
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


def _with_scratch(end, red):
    """(where the reductions' scratch starts, the bytes in all) for buffers ending at `end`
    and `red` bytes a phase of reduction scratch (two phases, aligned; none: `end`)."""
    if not red:
        return 0, end
    start = (end + SMEM_ALIGN - 1) // SMEM_ALIGN * SMEM_ALIGN
    return start, start + 2 * red


def _share_for_occupancy(launch, smem, plan, arch, offset, red, mbar_bytes):
    """The bytes of the shared buffers after sharing storage between buffers whose lifetimes
    do not overlap (as when they do not fit otherwise), where that lets more blocks share an
    SM and the registers allow them whatever ptxas takes (255 a thread): FlashAttention's
    output tile on 128 threads takes Q's storage after the loop, 2 blocks an SM instead of 1.
    Not for a grid of fewer blocks than the SMs (its blocks would pair up on half of them:
    the published FlashAttention example's regression case, 64 blocks, 0.0153 -> 0.0166 ms on
    the H200; its 1024-block case 0.365 -> 0.280 ms). Otherwise `offset`, each buffer keeping
    its own storage."""
    from tilelang.backend.cuda.target import (RESERVED_SMEM, full_occupancy_blocks, smem_carveout_bytes,
                                              typical_sm_count)
    grid = 1
    for e in launch.grid:
        c = E.const_int_value(e)
        grid = grid * c if c is not None and grid is not None else None
    if grid is not None and grid < typical_sm_count(arch):
        return offset
    warps = (plan.nthreads + 31) // 32
    by_regs = 65536 // (warps * 32 * 256)   # at 255 registers a thread (allocated 256 a thread)

    def blocks(nbytes):
        return min(full_occupancy_blocks(plan.nthreads, nbytes + mbar_bytes, arch), by_regs)
    more_blocks = blocks(offset) < 2 and by_regs >= 2
    # a straight-line kernel without tensor-core tiles (elementwise tiles staged through
    # shared memory) streams global memory: at the same blocks an SM, less shared memory
    # leaves the driver a smaller carveout and more L1 for the loads in flight
    more_l1 = plan.options.smem_sharing_l1 and not plan.pipelines and not plan.gemms
    if not (more_blocks or more_l1):
        return offset
    saved = {id(b): plan.placements[id(b)].offset for b in smem}
    red_offset, trial = _with_scratch(_assign_offsets(smem, plan, _live_ranges(launch, smem, plan.depends)), red)
    if more_blocks and blocks(trial) > blocks(offset):
        plan.red_offset = red_offset
        plan.smem_shared_for_occupancy = (f"{trial} bytes instead of {offset}, {blocks(trial)} blocks an SM "
                                          f"instead of {blocks(offset)}")
        return trial
    if more_l1 and trial < offset:
        n = full_occupancy_blocks(plan.nthreads, offset + mbar_bytes, arch)
        per_sm = lambda nbytes: smem_carveout_bytes(arch, n * (nbytes + mbar_bytes + RESERVED_SMEM))
        if full_occupancy_blocks(plan.nthreads, trial + mbar_bytes, arch) >= n and per_sm(trial) < per_sm(offset):
            plan.red_offset = red_offset
            plan.smem_shared_for_occupancy = (
                f"{trial} bytes instead of {offset}: {n} blocks an SM in a {per_sm(trial) // 1024} KB shared "
                f"carveout instead of {per_sm(offset) // 1024} KB, leaving more L1 for global loads")
            return trial
    for b in smem:
        plan.placements[id(b)].offset = saved[id(b)]
    return offset


def _assign_offsets(smem, plan, live):
    """Place shared buffers, largest first, at the lowest offset that no buffer with an
    overlapping lifetime occupies (buffers used by disjoint top-level statements share
    space; plan/sync.py puts a barrier where one's storage passes to the next)."""
    placed = []   # (lo, hi, first, last)
    order = sorted(smem, key=lambda b: -plan.placements[id(b)].stage_bytes * plan.placements[id(b)].stages)
    end = 0
    for buf in order:
        p = plan.placements[id(buf)]
        align = 1024 if p.swizzle or p.layout is not None else SMEM_ALIGN   # (a TMA swizzle needs it)
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


def _kept_annotations(decls, annotated, gemms, plan, swizzled):
    """({id(buf): SharedLayout}, {id(buf): report text}): the annotated shared layouts the
    buffers keep as they are (strided or custom; sw128 ones are in `swizzled`), and those
    that give way: a swizzle of the public family (make_swizzled_layout & co., whose
    purpose is a layout the tensor cores read well) on an operand of a tensor-core gemm
    that reads another one takes that gemm's operand layout; the plan report says so."""
    tc = set()
    for g in gemms:
        if plan.gemms.get(id(g)) is not None:
            tc |= {id(g.A.buffer), id(g.B.buffer)}
    kept, gave_way = {}, {}
    for buf in decls:
        a = annotated.get(id(buf))
        if a is None:
            continue
        if a.kind == "sw128" and id(buf) in swizzled:
            continue
        if id(buf) in tc and (a.kind == "sw128" or not a.swizzle.is_none()):
            gave_way[id(buf)] = f"annotated {a.name} replaced by the operand layout of its tensor-core gemm"
            continue
        kept[id(buf)] = a if a.kind != "sw128" else _as_custom(a, buf)
    return kept, gave_way


def _as_custom(a, buf):
    """An sw128 annotation on a buffer that is not a wgmma operand: read through the layout."""
    from tilelang.backend.cuda.layout.shared import SharedLayout, run_strides
    return SharedLayout("custom", a.layout, run_strides(buf.ndim, a.contiguous), a.contiguous, a.size, a.swizzle)


def _check_fragment_annotations(decls, frag, plan, gemms=()):
    """A Fragment annotated on a local.fragment is honoured when it places every element
    on the threads of the register layout inference chose: the Fragment itself where no
    gemm constrains the buffer (layout/annotated.py), else the gemm's layout when they
    agree (the register order within a thread is the backend's); otherwise the plan
    report and a warning say why the compiler's layout (or shared memory) is used. A
    fragment's placement never changes a
    result (its elements are only reached through tile ops and T.Parallel loops), and the
    published examples annotate accumulators (make_dq_layout) whose move to shared
    memory would cost their gemm the tensor cores."""
    import numpy as np
    from tilelang.layout import Fragment
    out = {}   # id(buf) -> what became of the annotation (plan report)
    for buf in decls:
        user = getattr(buf, "layout", None)
        if buf.scope != "local.fragment" or user is None:
            continue
        line = getattr(getattr(buf, "layout_span", None), "line", None)
        where = f" (line {line})" if line else ""
        if not isinstance(user, Fragment):
            raise located(ValueError, f"T.annotate_layout on the fragment `{buf.name}`: got a "
                          f"{type(user).__name__}; a local.fragment takes a Fragment (thread and register "
                          f"of each element)", span=getattr(buf, "layout_span", None) or buf.span,
                          hint="T.Fragment(shape, forward_thread_fn=..., forward_index_fn=...)")
        lay = frag.layouts.get(id(buf))
        mine = _fragment_of(lay, plan.nthreads)
        same = False
        if mine is not None:
            try:
                a, b = user.thread_table(), mine.thread_table()
                same = a.shape[0] == b.shape[0] and a[0].size == b[0].size and \
                    np.array_equal(np.sort(a.reshape(a.shape[0], -1), 0), np.sort(b.reshape(b.shape[0], -1), 0))
            except (ValueError, TypeError, NotImplementedError):
                same = False
        if same:
            why = f"annotated Fragment{where} honoured"
        else:
            reason = _why_not_honoured(buf, frag, gemms)
            why = f"annotated Fragment{where} not honoured: {reason}"
            warnings.warn(f"T.annotate_layout on the fragment `{buf.name}`{where} not honoured: {reason}",
                          stacklevel=2)
        frag.report[:] = [(n, l, f"{w}; {why}" if n == buf.name else w) for n, l, w in frag.report]
        out[id(buf)] = why
    return out


def _why_not_honoured(buf, frag, gemms):
    """Why a fragment keeps the compiler's layout instead of the user's Fragment."""
    gemm = next((g for g in gemms if any(r.buffer is buf for r in (g.A, g.B, g.C))), None)
    if gemm is not None:
        return "a T.gemm fixes its register layout (the compiler's layout is used)"
    if id(buf) in frag.not_honoured:
        return f"{frag.not_honoured[id(buf)]} (the compiler's layout is used)"
    reason = next((w for n, lay, w in frag.report if n == buf.name and isinstance(lay, str)), None)
    if reason is not None:
        return f"kept in shared memory: {reason}"
    return "no register layout of this backend matches it (the compiler's layout is used)"


def _fragment_of(lay, nthreads):
    if lay is None:
        return None
    from tilelang.backend.cuda.layout.tile import Scalar
    return lay.fragment(nthreads) if isinstance(lay, Scalar) else lay.fragment()


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
            elif p is not None and p.kind == "acc" and getattr(p.acc, "partial_warps", getattr(p.acc, "WN", 1)) > 1:
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


def _gemm_configs(gemms, plan, arch, nthreads, shared_a, unpadded_stride, forced=(), pinned=None, no_wgmma=()):
    """Fill plan.gemms; returns the ids of shared buffers that take the sw128 layout
    (`forced`: those whose annotated layout it is). A wgmma with a fragment A reads it
    from registers unless its gemm is in `shared_a`. A gemm that cannot use wgmma but
    shares an operand with one that does runs mma.sync on the swizzled tile when ldmatrix
    can address it (_mma_reads_swizzled: a whole 16-bit tile); otherwise it would fall back
    to the SIMT loop, and then the wgmma gemms it shares buffers with use mma.sync too.
    The gemms in `no_wgmma` do not use wgmma."""
    no_wgmma = set(no_wgmma)
    while True:
        swizzled, blocked = _gemm_configs_once(gemms, plan, arch, shared_a, unpadded_stride, forced, no_wgmma,
                                               pinned or {})
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
        for g in gemms:
            if id(g) in grown - no_wgmma:
                plan.wgmma_lost[id(g)] = (
                    "it shares a tile or its accumulator with a gemm that cannot run on wgmma's swizzled "
                    f"layout: {', '.join(_gemm_text(h) for h in blocked)}")
        no_wgmma = grown


def _gemm_text(g):
    span = getattr(g, "span", None)
    at = f" (line {span.line})" if getattr(span, "line", None) is not None else ""
    return f"T.gemm({g.A.buffer.name}, {g.B.buffer.name}, {g.C.buffer.name}){at}"


def _mma_reads_swizzled(cfg, r, gemms, plan):
    """An mma.sync gemm (ldmatrix, 16-bit operands) can read operand `r` in the swizzled
    layout a wgmma gemm gives its buffer (tl::tile_offset in mma.h): a 16-bit tile whose
    rows are not in a wgmma's slab order, the whole buffer or a strip tile of it (a slot of
    a [stages, R, C] buffer, whole swizzle strips of its columns: ops/wgmma.py strip_tile),
    which ldmatrix then addresses from the tile's first element with the strip stride. The
    FlashAttention backward reads K as the A of a wgmma (S = K Q^T, 128 rows) and as the B
    of an mma.sync (dQ = dS^T K, 32 rows); the sparse MLA backward reads Q_shared[:, :512]
    as the A of a wgmma (64 rows) and as the B of the 32-row dKV = dP^T Q on mma.sync:
    without this both, and every gemm sharing a tile with them, fell back to mma.sync."""
    buf = r.buffer
    return plan.options.mma_swizzled and not cfg.k32 and not cfg.tf32 and buf.ndim >= 2 and buf.dtype.bits == 16 and \
        swizzle_bytes(buf) > 0 and strip_tile(r, plan.loop_ranges) and \
        not any(h.A.buffer is buf and getattr(plan.gemms.get(id(h)), "slabs", 1) > 1 for h in gemms)


_SLAB_CHAIN_REGS = 192   # accumulator registers per thread that leave room for the rest (of 255)


def _accumulator_regs(gemms, plan):
    """Registers per thread of the register accumulators of the kernel's gemms (each once)."""
    seen, total = set(), 0
    for h in gemms:
        c = h.C.buffer
        n = 1
        for d in c.shape:
            n *= E.const_int_value(d) or 0
        if c.scope == "local.fragment" and id(c) not in seen:
            seen.add(id(c))
            total += n * c.dtype.bits // 32 // max(plan.threads_of(h), 1)
    return total


def _atomic_staging_tiles(launch, decls, gemms, annotated, frag):
    """ids of the 32-bit shared tiles that stage an mma accumulator on its way to global
    atomics (the published sparse MLA backward's `acc_dkv_shared`, [16, 512] float: written
    from the accumulator fragment, read only by nests of `T.atomic_addx4`). Their rows are a
    multiple of 128 bytes, so the accumulator's stores (a warp: 8 rows x 4 column pairs) all
    hit the same 8 banks, 8-way conflicts; padding each row by 16 bytes (as ldmatrix operands
    are) leaves 2-way ones, and the atomics' 16-byte row reads stay aligned. Tiles a tile op
    or any other nest reads keep their rows dense (a bulk copy needs them so)."""
    from tilelang.backend.cuda.analysis.facts import accesses
    operands = {id(r.buffer) for g in gemms for r in (g.A, g.B, g.C)}
    cand = {id(b) for b in decls if b.scope in ("shared", "shared.dyn") and b.ndim == 2 and b.dtype.bits == 32
            and id(b) not in operands and id(b) not in annotated and getattr(b, "alias_of", None) is None
            and None not in (shape := _const_shape(b)) and shape[1] * 4 % 128 == 0}
    if not cand:
        return set()
    from_acc, bad = set(), set()

    def nest(n):
        if isinstance(n, TO.TileOp):
            reads, writes = accesses(n)
            bad.update(id(b) for b in reads + writes)
            return
        if not (isinstance(n, S.For) and n.kind == S.PARALLEL):
            return
        reads, writes = accesses(n)
        atomics = []
        walk(n, lambda x: atomics.append(x) if isinstance(x, E.Call) and TO.is_atomic_access(x) else None)
        accs = any(isinstance(frag.layouts.get(id(b)), TILE_2D) for b in reads)
        for b in writes:
            if id(b) in cand:
                (from_acc if accs else bad).add(id(b))
        for b in reads:
            if id(b) in cand and not atomics:
                bad.add(id(b))
    walk(launch.body, nest)
    return from_acc - bad


def _store_staging_tiles(launch, decls, gemms, annotated, plan, arch):
    """ids of the shared tiles that only stage a tile on its way to a global tensor (the
    epilogue `T.copy(C_local, C_shared); T.copy(C_shared, C[...])`): 16-bit, 2-D, 64-column
    strips, the source of a whole-tile copy into a kernel parameter and never filled from
    global memory. They take the 128-byte swizzle, whose TMA store (ops/tma_store.py, one
    box per strip) reads them as the row-major box would: the threads' pair stores of the
    accumulator then spread 8 rows over 8 different 16-byte chunks (a row-major 128-column
    tile put all 8 rows of a warp's store in the same 4 banks: 8-way conflicts)."""
    from tilelang.backend.cuda.ops.vector_copy import match_copy
    from tilelang.backend.cuda.analysis.facts import parallel_nest
    from tilelang.backend.cuda.target import arch_number
    if not plan.options.bulk_tiles or arch is None or arch_number(arch) < 90:
        return set()
    operands = {id(r.buffer) for g in gemms for r in (g.A, g.B)}
    declared = {id(b) for b in decls}   # a global buffer not declared in the kernel is a parameter
    cand = {id(b): b for b in decls if b.scope in ("shared", "shared.dyn") and b.ndim == 2 and b.dtype.bits == 16
            and id(b) not in operands and id(b) not in annotated and getattr(b, "alias_of", None) is None
            and None not in (shape := _const_shape(b)) and shape[0] % 8 == 0 and shape[0] <= 256
            and shape[1] % 64 == 0}
    stored, filled = set(), set()

    def f(n):
        if not (isinstance(n, S.For) and n.kind == S.PARALLEL):
            return
        m = match_copy(parallel_nest(n)[3])
        if m is None:
            return
        _, store, load, _ = m
        if id(load.buffer) in cand and store.buffer.scope == "global" and id(store.buffer) not in declared:
            stored.add(id(load.buffer))
        if id(store.buffer) in cand and load.buffer.scope == "global":
            filled.add(id(store.buffer))
    walk(launch.body, f)
    return stored - filled


def _gemm_configs_once(gemms, plan, arch, shared_a, unpadded_stride, forced, no_wgmma, pinned):
    """One round of _gemm_configs: (swizzled buffer ids, the gemms left to the SIMT
    loop only because an operand has wgmma's swizzle). `pinned`: {id(buf): SharedLayout}
    of operands whose annotated layout the gemm must read as it is: wgmma cannot (it
    reads sw128 tiles), mma.sync can when it is strided with 16-byte rows (ldmatrix)."""
    swizzled, for_wgmma, blocked = set(forced), set(), []
    for g in gemms:
        ops = [pinned[id(r.buffer)] for r in (g.A, g.B) if id(r.buffer) in pinned]
        cfg = None if id(g) in no_wgmma or ops else wgmma_config(g, arch, plan.threads_of(g), plan.loop_ranges)
        if ops:
            plan.wgmma_lost[id(g)] = "an operand has a T.annotate_layout layout, which wgmma cannot read"
        if cfg is not None and cfg.a_regs and (id(g) in shared_a or cfg.WN > 1):
            # the fragment lives in shared memory: read A as a shared tile (also when
            # warpgroups split N: each would need all of A's rows and columns)
            cfg = None if g.trans_A or not swizzle_ok(g.A.buffer) or cfg.K % 64 else \
                dataclasses.replace(cfg, a_regs=False)
            if cfg is None:
                plan.wgmma_lost[id(g)] = (f"its A fragment `{g.A.buffer.name}` cannot be read from registers "
                                          f"(no register layout of the wgmma A operand fits it, or warpgroups split N) "
                                          f"nor as a 128-byte-swizzled shared tile")
        if cfg is not None and cfg.slabs > 1 and (
                not cfg.a_regs and sum(id(g.A.buffer) in (id(h.A.buffer), id(h.B.buffer)) for h in gemms) > 1 or
                any(h.A.buffer.scope == "local.fragment" for h in gemms) and
                _accumulator_regs(gemms, plan) > _SLAB_CHAIN_REGS):
            # A's rows are stored in this gemm's slab order: no other gemm may read it; and
            # in attention-like chains (a register A next to it) only while the accumulators
            # leave registers for the rest: wgmma keeps each whole accumulator live where
            # mma.sync lets ptxas spill parts (FlashAttention d128, 128 x 128 tile, 128
            # threads: 256 accumulator registers, 70 spills with mma.sync, 260 with slabs;
            # its 128 x 64 tile: 192, no spills with slabs, 9 with mma.sync)
            cfg = None
            plan.wgmma_lost[id(g)] = (f"its {g.A.buffer.name} rows would be stored in a wgmma slab order another "
                                      f"gemm cannot read, or its accumulators leave too few registers")
        if cfg is not None:
            for_wgmma.add(id(g.B.buffer))
            if not cfg.a_regs:
                for_wgmma.add(id(g.A.buffer))
        plan.gemms[id(g)] = cfg
    swizzled |= for_wgmma
    for g in gemms:
        ops = [(r.buffer, pinned[id(r.buffer)]) for r in (g.A, g.B) if id(r.buffer) in pinned]
        if any(a.kind != "strided" or a.strides[-1] != 1 or (a.strides[-2] * b.dtype.itemsize) % 16
               for b, a in ops if b.ndim >= 2):
            note = f"T.gemm reading {', '.join(b.name for b, _ in ops)} through the annotated layout: SIMT loop"
            if note not in plan.notes:
                plan.notes.append(note)
            plan.gemms[id(g)] = None
            continue
        if plan.gemms[id(g)] is None:
            cfg = mma_config(_as_shared_view(g), arch, plan.threads_of(g), unpadded_stride)
            both = {id(g.A.buffer), id(g.B.buffer)} & swizzled
            if cfg is not None and both and not both & for_wgmma:
                swizzled -= both   # an annotated swizzle gives way to the tensor cores' own layout
            elif cfg is not None and both and not all(
                    _mma_reads_swizzled(cfg, r, gemms, plan) for r in (g.A, g.B) if id(r.buffer) in both):
                cfg = None   # ldmatrix cannot address this tile; the SIMT loop handles any layout
                blocked.append(g)
            if cfg is not None and cfg.tf32 and g.A.buffer.scope == "local.fragment" and not g.trans_A and \
                    id(g) not in shared_a and id(g.A.buffer) not in swizzled:
                # a TF32 mma.sync reads a register A fragment as it is (layout/fragment.py Tf32ALayout)
                cfg = dataclasses.replace(cfg, a_regs=True)
            elif cfg is not None and not cfg.tf32 and not cfg.k32 and cfg.WN == 1 and plan.options.mma_rs and \
                    g.A.buffer.scope == "local.fragment" and g.A.buffer.dtype.bits == 16 and not g.trans_A and \
                    id(g) not in shared_a and id(g.A.buffer) not in swizzled:
                # a 16-bit mma.sync reads an A fragment held in the accumulator pattern (P of
                # FlashAttention, cast from the first gemm's accumulator) from registers: no shared
                # round trip; the fragment inference falls back to shared A when it cannot hold it so
                cfg = dataclasses.replace(cfg, a_regs=True)
            if cfg is not None and cfg.tf32 and plan.options.mma_chains:
                cfg = dataclasses.replace(cfg, chains=tf32_chains(cfg))
            plan.gemms[id(g)] = cfg
    return swizzled, blocked
