"""CUDA C++ for bulk tensor copies (TMA, sm_90a; tma.py says which copies qualify): the
statements of the TMA ring that the pass pipeline_tma_ring writes into the IR
(plan/tma_ring_pipeline.py, plan/tma_ring_wgmma.py; ir/tma_ring.py), including this
block's half of a tile multicast to a pair of blocks, how a pipelined loop runs on the
ring (`ring_mode`, `pingpong`), the warp-specialized producer and consumer, and
T.tma_copy's bulk form. Each function takes the kernel's code generator `cg`
(emit/kernel.py KernelCodegen), whose tensor-map parameters it adds."""
from __future__ import annotations

from dataclasses import dataclass, replace

from tilelang.arith.simplify import simplify
from tilelang.ir import expr as E
from tilelang.backend.cuda.ops.tma import match_tma


def tma_copies(cg, info):
    """TmaCopy for every copy of the loop, or None (tma.py has the conditions)."""
    if not cg.use_tma:
        return None
    out = [match_tma(c, cg.plan, cg.param_bufs) for c in info.copies]
    return None if any(t is None for t in out) else out


def ring_mode(cg, info):
    """How a pipelined loop fed by bulk tensor copies runs on the TMA ring: "free" (a
    register-only body, no block barrier per iteration), "barrier" (a body that also
    writes shared or global memory, e.g. MLA decode's P tile: a block barrier at the top
    of every iteration orders those writes, as in the cp.async loop, which plan/sync.py
    assumes), or None (the ring is switched off: TILELANG_CUDA_TMA_RING=0)."""
    from tilelang.backend.cuda.analysis.facts import accesses
    if not cg.options.tma_ring:
        return None
    from tilelang.backend.cuda.plan.sync import is_inserted_barrier
    for st in info.rest:
        if is_inserted_barrier(st):   # plan/sync.py: a barrier inside the body
            return "barrier"
        for b in accesses(st)[1]:
            p = cg.placement(b)
            if b.scope == "global" or p is None or p.kind == "smem":
                return "barrier"
    return "free"


def pingpong(cg, info):
    """(the body's first gemm, the first of two free named-barrier ids) when the two
    warpgroups of a 256-thread block should take turns at it (FlashAttention-3's
    schedule: one warpgroup's softmax runs while the other's gemm has the tensor
    cores), else None. Opt-in: TILELANG_CUDA_PINGPONG=1. The body is register-only
    (ring_mode "free"), so the warpgroups share nothing but the turns."""
    if not cg.options.pingpong or cg.plan.nthreads != 256 or ring_mode(cg, info) != "free":
        return None
    from tilelang.ir import stmt as S
    from tilelang.ir import tile_ops as TO
    from tilelang.ir.visitor import walk
    gemms = [s for s in info.rest if isinstance(s, TO.Gemm)]
    if len(gemms) < 2 or getattr(cg.plan.gemms.get(id(gemms[0])), "kind", "") != "wgmma":
        return None
    taken = set(cg.plan.regions.barrier_ids.values())
    walk(cg.launch.body, lambda n: taken.add(E.const_int_value(n.barrier_id))
         if isinstance(n, S.Barrier) and n.barrier_id is not None else None)
    ids = [i for i in range(1, 15) if i not in taken and i + 1 not in taken]
    return (gemms[0], ids[-1]) if ids else None


@dataclass
class Ring:
    """The C names of a TMA ring's per-slot state: "full" mbarriers (the copies'
    bytes), then either "empty" mbarriers (a producer thread waits for the releases)
    or release counters (tma.h's slot_release_last); the other is None."""
    full: str
    empty: str
    released: str


# the statements of the ring pass (plan/tma_ring_pipeline.py, ir/tma_ring.py) ------------

def emit_ring_alloc(cg, op):
    """T.tma_ring_alloc: the ring's tensor maps (kernel parameters, in the copies' order,
    then the maps of the row halves a block multicasts), its "full" mbarriers and either
    its release counters or its "empty" mbarriers after the kernel's other dynamic shared
    memory."""
    ring = op.ring
    tmas = [match_tma(c, cg.plan, cg.param_bufs) for c in ring.copies]
    if any(t is None for t in tmas):
        raise AssertionError("CUDA codegen: copies planned for the TMA ring do not match it")
    cg.ring_maps[id(ring)] = [tensor_map(cg, t) for t in tmas]
    cg.ring_maps[id(ring), "rows"] = {i: tensor_map(cg, replace(tmas[i], rows=tmas[i].rows // 2))
                                      for i, how in ring.multicast.items() if how == "rows"}
    full = cg.names.new(ring.full, ring.full.name)
    off = (cg.plan.smem_bytes + 7) // 8 * 8
    cg.w(f"unsigned long long* {full} = reinterpret_cast<unsigned long long*>(tl_smem + {off});")
    if ring.empty is not None:
        cg.plan.smem_bytes = off + 16 * ring.stages
        cg.w(f"unsigned long long* {cg.names.new(ring.empty, ring.empty.name)} = {full} + {ring.stages};")
    else:
        cg.plan.smem_bytes = off + 12 * ring.stages
        released = cg.names.new(ring.released, ring.released.name)
        cg.w(f"unsigned* {released} = reinterpret_cast<unsigned*>({full} + {ring.stages});")


def emit_prefetch_descriptors(cg, op):
    for m in cg.ring_maps[id(op.ring)]:
        cg.w(f"tl::tma_prefetch_desc(&{m});")


def emit_ring_load(cg, op):
    """T.tma_load: one copy nest of an iteration into its ring slot (the thread that
    reaches it issues it)."""
    t = match_tma(op.copy, cg.plan, cg.param_bufs)
    if t is None:
        raise AssertionError("CUDA codegen: a copy planned for the TMA ring does not match it")
    el = cg.placement(t.dst).stage_bytes // t.dst.dtype.itemsize
    dst = f"{cg.buf_name(t.dst)} + ({cg.expr(op.slot)}) * {el}"
    m = cg.ring_maps[id(op.ring)][op.index]
    if op.rank is not None:   # this block's half, to both blocks of the pair
        how = op.ring.multicast[op.index]
        half = cg.ring_maps[id(op.ring), "rows"].get(op.index, m)
        tma_loads_multicast(cg, t, half, how, dst, f"&{cg.access(op.barrier)}", cg.expr(op.rank))
        return
    tma_loads(cg, t, m, dst, f"&{cg.access(op.barrier)}")


def emit_prefetch_l2(cg, op):
    t = match_tma(op.copy, cg.plan, cg.param_bufs)
    m = cg.ring_maps[id(op.ring)][op.index]
    for r, _, c in t.boxes():
        coords = t.coords(t.row0 + r, t.col0 + c)
        cg.w(f"tl::tma_prefetch_l2(&{m}, {', '.join(cg.expr(simplify(c)) for c in coords)});")


def emit_ring_invalidate(cg, op):
    full = cg.buf_name(op.ring.full)
    empty = f" tl::mbar_inval(&{cg.buf_name(op.ring.empty)}[tl_s]);" if op.ring.empty is not None else ""
    cg.w(f"for (int tl_s = 0; tl_s < {op.ring.stages}; ++tl_s) {{ tl::mbar_inval(&{full}[tl_s]);{empty} }}")


def issue_ring_copies(cg, st, tmas, maps, full, nbytes, kexpr, slot):
    """One thread: the bulk copies of iteration `kexpr` of loop `st` into ring slot
    `slot` (C expressions), announced on full[slot]."""
    cg.w(f"tl::mbar_arrive_expect_tx(&{full}[{slot}], {nbytes});")
    kn = cg.names.fresh("tl_kt")
    cg.w(f"const int {kn} = {kexpr};")
    with cg.names.bound(st.var, kn):
        for t, m in zip(tmas, maps):
            el = cg.placement(t.dst).stage_bytes // t.dst.dtype.itemsize
            tma_loads(cg, t, m, f"{cg.buf_name(t.dst)} + ({slot}) * {el}", f"&{full}[{slot}]")


def emit_tma_copy(cg, op, nest, bar):
    """T.tma_copy(src, dst, barrier=bar) as bulk tensor copies (tma.py): the first
    thread of the range announces the bytes on `bar` and issues them."""
    t = match_tma(nest, cg.plan, cg.param_bufs)
    if t is None or cg.placement(t.dst).stages != 1:
        return False
    m = tensor_map(cg, t, share=True)
    cg.w("if (tl_tid == 0) {")
    cg.indent += 1
    cg.w(f"tl::mbar_expect_tx(&{cg.access(bar)}, {t.nbytes});")
    tma_loads(cg, t, m, cg.buf_name(t.dst), f"&{cg.access(bar)}")
    cg.indent -= 1
    cg.w("}")
    return True


def tensor_map(cg, t, share=False):
    """The kernel parameter holding the tensor map of TmaCopy `t`; with `share`, one
    already made for the same tensor and box (the slots of a T.tma_copy ring)."""
    if share:
        same = [n for n, u in enumerate(cg.tmaps) if u.src is t.src and u.box_rows == t.box_rows and
                u.row_dim == t.row_dim and u.width == t.width and getattr(u, "slab_view", False) == t.slab_view and
                getattr(u, "shared_map", False)]
        if same:
            return f"tl_tmap_{same[0]}"
        t.shared_map = True
    cg.tmaps.append(t)
    cg.aligned[t.src.name] = max(cg.aligned.get(t.src.name, 1), 16)
    return f"tl_tmap_{len(cg.tmaps) - 1}"


def tma_loads(cg, t, tmap, dst, bar):
    """The bulk copies of TmaCopy `t` into the tile at `dst`: one per swizzle strip (64
    columns), and per 16-row run of a tile stored in slab_row order unless its view
    (`t.slab_view`, TmaCopy.slab_view_map) writes that order in one box."""
    for r, p, c in t.boxes():
        coords = t.coords(t.row0 + r, t.col0 + c)
        cs = ", ".join(cg.expr(simplify(x)) for x in coords)
        off = (c // t.width) * t.rows * t.width + p * t.width
        cg.w(f"tl::tma_load_{len(coords)}d({dst} + {off}, &{tmap}, {bar}, {cs});")


def tma_loads_multicast(cg, t, tmap, how, dst, bar, rank):
    """This block's half of TmaCopy `t`, multicast to both blocks of the pair: the
    strips of parity `rank` ("strips"), or row half `rank` of every strip with a
    map of R/2-row boxes ("rows"; sw128 repeats every 8 rows, so a half starting on
    a 16-row boundary keeps the tile's layout)."""
    r0, c0 = cg.expr(t.row0), cg.expr(t.col0)
    if how == "strips":
        for j in range(t.cols // 128):
            cg.w(f"tl::tma_load_2d_multicast({dst} + ({2 * j} + {rank}) * {t.rows * 64}, &{tmap}, {bar}, "
                 f"({c0}) + ({2 * j} + {rank}) * 64, {r0}, 3);")
        return
    h = t.rows // 2
    for strip in range(t.cols // 64):
        off = f" + {strip * 64}" if strip else ""
        cg.w(f"tl::tma_load_2d_multicast({dst} + {strip * t.rows * 64} + {rank} * {h * 64}, &{tmap}, {bar}, "
             f"({c0}){off}, ({r0}) + {rank} * {h}, 3);")


# warp specialization (plan/warp_specialize.py decides; these print its two roles) ---------

def ws_loop(cg):
    """(the T.Pipelined loop, its PipelineInfo) that the plan's WarpSpecialization names."""
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    ws = cg.plan.warp_specialized
    found = []
    walk(cg.launch.body, lambda n: found.append(n) if isinstance(n, S.For) and id(n) == ws.loop else None)
    if not found:
        raise AssertionError("CUDA codegen: the warp-specialized loop of the plan is not in the kernel")
    return found[0], cg.plan.pipelines[id(found[0])]


def emit_ws_producer(cg):
    """At the kernel's start, before any code of the user's: the ring's "full" (one
    arrival: the producer's, with the bytes) and "empty" mbarriers (one arrival per
    consumer warp), initialized before every thread's barrier; then the producer
    warpgroup (the last one) gives registers back and its first thread runs the loop:
    wait until the consumers released the slot (a fresh barrier's "previous phase"
    counts as complete, so the first round does not wait), announce the bytes on
    "full" and issue the loads; the other producer threads leave at once. The consumers
    take their registers and go on with the kernel's code; every later block barrier of
    theirs is their named barrier (KernelCodegen.sync). Records the ring on `cg`
    (`cg.ws_ring`) for emit_ws_consumer."""
    ws = cg.plan.warp_specialized
    st, info = ws_loop(cg)
    tmas = tma_copies(cg, info)
    if tmas is None:
        raise AssertionError("CUDA codegen: copies planned for the TMA ring do not match it")
    ns, T = ws.stages, ws.consumer_threads
    maps = [tensor_map(cg, t) for t in tmas]
    nbytes = sum(t.nbytes for t in tmas)
    full = cg.names.fresh("tl_full")
    empty = cg.names.fresh("tl_empty")
    off = (cg.plan.smem_bytes + 7) // 8 * 8
    cg.plan.smem_bytes = off + 16 * ns
    cg.w(f"unsigned long long* {full} = reinterpret_cast<unsigned long long*>(tl_smem + {off});")
    cg.w(f"unsigned long long* {empty} = {full} + {ns};")
    cg.w("if (tl_tid == 0) {")
    for m in maps:
        cg.w(f"  tl::tma_prefetch_desc(&{m});")
    cg.w(f"  for (int tl_s = 0; tl_s < {ns}; ++tl_s) {{ tl::mbar_init(&{full}[tl_s], 1); "
         f"tl::mbar_init(&{empty}[tl_s], {T // 32}); }}")
    cg.w("  tl::mbar_init_fence();")
    cg.w("}")
    cg.w("__syncthreads();   // the last barrier of all threads: the producer leaves after its loop")
    cg.w(f"if (tl_tid >= {T}) {{   // the producer warpgroup (plan/warp_specialize.py)")
    cg.indent += 1
    if ws.producer_regs:
        cg.w(f"tl::set_max_nreg<{ws.producer_regs}, false>();")
    cg.w(f"if (tl_tid == {T}) {{")
    cg.indent += 1
    lo = cg.expr(st.min)
    hi = cg.expr(simplify(st.min + st.extent))
    stage, phase = cg.names.fresh("tl_stage"), cg.names.fresh("tl_phase")
    cg.w(f"int {stage} = 0;")
    cg.w(f"unsigned {phase} = 0u;")
    k = cg.names.fresh(st.var.name)
    cg.w(f"for (int {k} = {lo}; {k} < {hi}; ++{k}) {{")
    cg.indent += 1
    with cg.names.bound(st.var, k):
        if info.guard is not None:   # a masked iteration: neither role touches the ring
            cg.w(f"if (!({cg.expr(info.guard)})) continue;")
    cg.w(f"tl::mbar_wait(&{empty}[{stage}], {phase} ^ 1u);")
    issue_ring_copies(cg, st, tmas, maps, full, nbytes, k, stage)
    cg.w(f"if (++{stage} == {ns}) {{ {stage} = 0; {phase} ^= 1u; }}")
    cg.indent -= 1
    cg.w("}")
    cg.indent -= 1
    cg.w("}")
    cg.w("return;")
    cg.indent -= 1
    cg.w("}")
    if ws.consumer_regs:
        cg.w(f"tl::set_max_nreg<{ws.consumer_regs}, true>();")
    cg.ws_ring = Ring(full, empty, None)


def emit_ws_consumer(cg, st, info):
    """The consumers' side of the warp-specialized loop: wait for the slot's copies, run
    the body on it, release the slot (lane 0 of each warp, once the warp's wgmma groups on
    it are done). With one gemm per iteration (`in_flight`), its group stays in flight
    and the slot of the previous iteration that ran is released instead."""
    ws = cg.plan.warp_specialized
    ring = cg.ws_ring
    ns = ws.stages
    lo = cg.expr(st.min)
    hi = cg.expr(simplify(st.min + st.extent))
    cg.sync()   # what the consumers wrote to shared memory before the loop (plan/sync.py counts on it)
    stage, phase = cg.names.fresh("tl_stage"), cg.names.fresh("tl_phase")
    cg.w(f"int {stage} = 0;")
    cg.w(f"unsigned {phase} = 0u;")
    prev = None
    if ws.in_flight:   # the slot of the previous iteration that ran (-1: none yet)
        prev = cg.names.fresh("tl_prev")
        cg.w(f"int {prev} = -1;")
    k = cg.bind(st.var)
    cg.w(f"for (int {k} = {lo}; {k} < {hi}; ++{k}) {{")
    cg.indent += 1
    if info.guard is not None:
        cg.w(f"if (!({cg.expr(info.guard)})) continue;   // masked: the producer skipped it too")
    if ws.in_flight and cg.options.ws_early_release:
        # the slot is not filled yet: release the previous one now (its group done), not
        # once this one has arrived, so the producer refills it while the warp waits (else
        # every load waits for the one before: one ring slot less in flight)
        cg.w(f"if ({prev} >= 0 && !__all_sync(0xffffffffu, tl::mbar_test(&{ring.full}[{stage}], {phase}))) {{")
        cg.w("  tl::wgmma_wait<0>();")
        cg.w(f"  if ((tl_tid & 31) == 0) tl::mbar_arrive(&{ring.empty}[{prev}]);")
        cg.w(f"  {prev} = -1;")
        cg.w("}")
    cg.w(f"tl::mbar_wait(&{ring.full}[{stage}], {phase});")
    if ring_mode(cg, info) == "barrier":
        cg.sync()   # the previous iteration's shared writes (a dequantized tile): as on the single-role ring
    if ws.in_flight:
        g = info.rest[-1]
        cfg = cg.plan.gemms[id(g)]
        with cg.slot_pointers(info, stage):
            cg.w(cg.wgmma_call(g, cfg, issue_only=True))
        cg.w("tl::wgmma_wait<1>();")
        cg.w(f"if ({prev} >= 0 && (tl_tid & 31) == 0) tl::mbar_arrive(&{ring.empty}[{prev}]);")
        cg.w(f"{prev} = {stage};")
    else:
        with cg.slot_pointers(info, stage):
            for s in info.rest:
                cg.stmt(s, True)
        cg.w(f"if ((tl_tid & 31) == 0) tl::mbar_arrive(&{ring.empty}[{stage}]);")
    cg.w(f"if (++{stage} == {ns}) {{ {stage} = 0; {phase} ^= 1u; }}")
    cg.indent -= 1
    cg.w("}")
    if ws.in_flight:
        g = info.rest[-1]
        cg.w("tl::wgmma_wait<0>();")
        cg.w(f"tl::fence_regs<{cg.plan.gemms[id(g)].regs}>({cg.buf_name(g.C.buffer)});")
    cg.sync()   # the slots are read: the code after the loop may reuse them
