"""CUDA C++ for bulk tensor copies (TMA, sm_90a; tma.py says which copies qualify): the
statements of the TMA ring that the pass pipeline_tma_ring writes into the IR
(plan/tma_ring_pipeline.py, plan/tma_ring_wgmma.py; ir/tma_ring.py), including this
block's half of a tile multicast to a pair of blocks, how a pipelined loop runs on the
ring (`ring_mode`, `pingpong`), and T.tma_copy's bulk form. Each function takes the kernel's code generator `cg`
(emit/kernel.py KernelCodegen), whose tensor-map parameters it adds."""
from __future__ import annotations

from dataclasses import replace

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
    cg.ring_maps[id(ring)] = [tensor_map(cg, t) if t.flat is None else None for t in tmas]
    for t in tmas:   # a plain bulk copy reads its tensor's address: 16-byte aligned
        if t.flat is not None:
            cg.aligned[t.src.name] = max(cg.aligned.get(t.src.name, 1), 16)
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
        if m is not None:   # (a plain bulk copy has no tensor map)
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
    if t.flat is not None:   # (no L2 prefetch of a plain bulk copy's run)
        return
    for r, _, c in t.boxes():
        coords = t.coords(t.row0 + r, t.col0 + c)
        cg.w(f"tl::tma_prefetch_l2(&{m}, {', '.join(cg.expr(simplify(c)) for c in coords)});")


def emit_ring_invalidate(cg, op):
    full = cg.buf_name(op.ring.full)
    empty = f" tl::mbar_inval(&{cg.buf_name(op.ring.empty)}[tl_s]);" if op.ring.empty is not None else ""
    cg.w(f"for (int tl_s = 0; tl_s < {op.ring.stages}; ++tl_s) {{ tl::mbar_inval(&{full}[tl_s]);{empty} }}")


def emit_tma_copy(cg, op, nest, bar):
    """T.tma_copy(src, dst, barrier=bar) as bulk tensor copies (tma.py): the first
    thread of the range announces the bytes on `bar` and issues them. With a multicast
    form (plan/copy_forms.py, `cluster_mask`): every block announces the bytes on its own
    `bar`, the mask's lowest-ranked block issues the copies to every block of the mask (at
    the same shared offset, completing on the barrier at the same offset), the others of
    the mask issue nothing and a block outside the mask loads its own tile."""
    from tilelang.backend.cuda.plan.copy_form import COPY_FORM
    t = match_tma(nest, cg.plan, cg.param_bufs, views=True)
    if t is None or cg.placement(t.dst).stages != 1:
        return False
    m = tensor_map(cg, t, share=True)
    dst = cg.buf_name(t.dst) if t.dst_offset is None else f"({cg.buf_name(t.dst)} + ({cg.expr(t.dst_offset)}))"
    mask = getattr(op.annotations.get(COPY_FORM), "multicast", None)
    cg.w("if (tl_tid == 0) {")
    cg.indent += 1
    cg.w(f"tl::mbar_expect_tx(&{cg.access(bar)}, {t.nbytes});")
    if mask:
        first = (mask & -mask).bit_length() - 1   # the mask's lowest rank issues the multicast
        rank = cg.names.fresh("tl_rank")
        cg.w(f"const int {rank} = tl::block_rank_in_cluster();")
        cg.w(f"if ({rank} == {first}) {{")
        cg.indent += 1
        tma_loads(cg, t, m, dst, f"&{cg.access(bar)}", mask)
        cg.indent -= 1
        size = 1
        for d in cg.launch.annotations.get("cluster_dims") or []:
            size *= d
        if mask == (1 << size) - 1:   # every block of the cluster receives it
            cg.w("}")
        else:
            cg.w(f"}} else if ((({mask} >> {rank}) & 1) == 0) {{")
            cg.indent += 1
            tma_loads(cg, t, m, dst, f"&{cg.access(bar)}")
            cg.indent -= 1
            cg.w("}")
    else:
        tma_loads(cg, t, m, dst, f"&{cg.access(bar)}")
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


def tma_loads(cg, t, tmap, dst, bar, multicast=None):
    """The bulk copies of TmaCopy `t` into the tile at `dst`: one per swizzle strip (64
    columns), and per 16-row run of a tile stored in slab_row order unless its view
    (`t.slab_view`, TmaCopy.slab_view_map) writes that order in one box. `multicast`: the
    cluster ranks (a mask) whose shared memory each box lands in. A plain bulk copy
    (`t.flat`): one copy of its run, no tensor map (`tmap` None)."""
    if t.flat is not None:
        assert multicast is None, "a plain bulk copy is not multicast (plan_multicast skips it)"
        cg.w(f"tl::tma_load_bulk({dst}, {cg.buf_name(t.src)} + ({cg.expr(t.flat)}), {t.nbytes}, {bar});")
        return
    for r, p, c in t.boxes():
        coords = t.coords(t.row0 + r, t.col0 + c)
        cs = ", ".join(cg.expr(simplify(x)) for x in coords)
        off = (c // t.width) * t.rows * t.width + p * t.width
        if multicast is not None:
            cg.w(f"tl::tma_load_multicast({dst} + {off}, &{tmap}, {bar}, {multicast}, {cs});")
        else:
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
