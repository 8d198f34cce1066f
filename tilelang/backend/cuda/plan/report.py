"""The CUDA backend's decisions for one kernel as text: where every buffer lives (shared
memory offset, stages, swizzle; register tile layout; per-thread), how every T.gemm runs
(wgmma, mma.sync warp grid, or the SIMT loop), how each copy runs (plan/copy_forms.py),
which loops are pipelined and how deep, and the notes the planner left. The lower trace
(TL_LOWER_TRACE) writes it after the passes, next to the generated source, so the decisions
that follow the IR passes are visible."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.ir.printer import expr_str
from tilelang.backend.cuda.layout import REGISTER_FRAGMENT_KINDS


def _placement(p):
    if p.kind == "smem":
        extra = (f", {p.stages} stages of {p.stage_bytes} B" if p.stages > 1 else f", {p.stage_bytes} B") + \
            (f", sw{p.swizzle}" if p.swizzle else "") + (f", rows in slab_row<{p.row_slabs}> order" if p.row_slabs > 1 else "") + \
            (f", {p.annotated}" if p.annotated else "")
        return f"shared @ {p.offset}{extra}"
    if p.kind in REGISTER_FRAGMENT_KINDS:
        lay = p.acc.layout() if hasattr(p.acc, "layout") else type(p.acc).__name__
        return f"registers ({p.kind}): {lay}" + (f", {p.annotated}" if p.annotated else "")
    return p.kind


def _gemm(cfg):
    if cfg is None:
        return "SIMT loop (no tensor-core form fits)"
    kind = getattr(cfg, "kind", "mma")
    if kind == "wgmma":
        grid = f", warpgroups {cfg.WM // 4} x {cfg.WN}" if cfg.WN > 1 else \
            f", {cfg.slabs} slabs per warpgroup" if getattr(cfg, "slabs", 1) > 1 else ""
        types = ""
        if cfg.inst_k == 32:   # fp8: the operand types (e4m3 / e5m2) decide the instruction
            from tilelang.backend.cuda.ops.wgmma import ptx_type
            types = f" {ptx_type(cfg.dtype)} x {ptx_type(cfg.b_dtype)}"
        return f"wgmma m64n{cfg.inst_n}k{cfg.inst_k}{types}{grid}, A from {'registers' if cfg.a_regs else 'shared'}"
    form = "m16n8k32" if getattr(cfg, "k32", False) else "m16n8k8 .tf32" if getattr(cfg, "tf32", False) else \
        "m16n8k16"
    regs = ", A from registers" if getattr(cfg, "a_regs", False) else ""
    return f"mma.sync {form}, warps {cfg.WM} x {cfg.WN}{regs}, accumulate in {cfg.acc}"


def format_plan(entry, launch, plan) -> str:
    head = f"kernel {entry}" if entry is not None else "kernel plan"   # (None: printed with the IR)
    lines = [f"{head}: {plan.nthreads} threads, {plan.smem_bytes} B of dynamic shared memory"]
    decls = []
    walk(launch.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    lines.append("buffers:")
    for b in decls:
        p = plan.placements.get(id(b))
        if p is not None:
            lines.append(f"  {b.name:24s} {b.scope:15s} {_placement(p)}")
    if plan.red_phase_bytes:
        lines.append(f"  (reduction scratch)      shared @ {plan.red_offset}, 2 x {plan.red_phase_bytes} B")
    gemms = []   # (a T.gemm without a tensor-core form is its SIMT loop by now: plan/copy_forms.py)
    walk(launch.body, lambda n: gemms.append(n) if isinstance(n, TO.Gemm) else
         gemms.append(n.annotations["simt_gemm"]) if isinstance(n, S.For) and "simt_gemm" in n.annotations else None)
    if gemms:
        lines.append("gemms:")
        for g in gemms:
            cfg = plan.gemms.get(id(g))
            # an mma.sync reading a tile in a wgmma operand's swizzle (ldmatrix through tl::tile_offset)
            sw = [f"{r.buffer.name} sw{p.swizzle}" for r in (g.A, g.B) for p in [plan.placements.get(id(r.buffer))]
                  if cfg is not None and getattr(cfg, "kind", "mma") == "mma" and p is not None and p.swizzle]
            lines.append(f"  T.gemm({g.A.buffer.name}, {g.B.buffer.name}, {g.C.buffer.name}): "
                         f"{_gemm(cfg)}" + (f", reads {', '.join(sw)}" if sw else "") +
                         (", its group in flight past it" if id(g) in plan.chained_gemms else ""))
        # plan/wgmma_waits.py: where the groups in flight are waited for
        for waits in (plan.wgmma_waits_before, plan.wgmma_waits_after):
            lines.extend(f"  {w.describe()}" for w in waits.values())
    nests = []
    walk(launch.body, lambda n: nests.append(n) if isinstance(n, S.For) and "copy_form" in n.annotations else None)
    for title, mine in (("copies", lambda f: f.subject == "copy"), ("other loops", lambda f: f.subject != "copy")):
        chosen = [c for c in nests if mine(c.annotations["copy_form"])]
        if chosen:   # plan/copy_forms.py
            lines.append(f"{title}:")
            seen = set()   # a pipelined copy is in the prologue and the loop (plan/cp_async_pipeline.py): once
            for c in chosen:
                form = c.annotations["copy_form"]
                what = "" if form.subject == "copy" else f"{form.subject} "
                line = f"  {what}{_copy_text(c)}: {form}"
                if line not in seen:
                    seen.add(line)
                    lines.append(line)
    if plan.pipelines:
        lines.append("pipelines:")
        for info in plan.pipelines.values():
            guard = f" (each iteration under `if {expr_str(info.guard)}`)" if info.guard is not None else ""
            if info.issue_after_use:   # num_stages=1 (plan/pipeline.py)
                lines.append(f"  1 stage over {', '.join(b.name for b in info.bufs)}: one version each; "
                             f"the next iteration's copies issued after their last reader")
                lines.extend(f"    group {g}: {', '.join(_copy_text(c) for c in cs)}" for g, cs in enumerate(info.groups))
            else:
                lines.append(f"  {info.stages} stages over {', '.join(b.name for b in info.bufs) or '-'}{guard}")
            lines.extend(f"    note: {n}" for n in info.notes)
    if plan.warp_specialized is not None:   # plan/warp_specialize.py
        lines.append(f"warp specialization: {plan.warp_specialized.describe()}")
    elif plan.warp_specialize_why:
        lines.append(f"warp specialization: none ({plan.warp_specialize_why})")
    if plan.fence_barriers:   # plan/proxy_fences.py
        lines.append("barriers: each fences shared memory toward the async proxy first (its tensor-core or bulk-copy readers)")
        if launch is not None and _unfenced_inserted(launch):
            lines.append("  but the inserted barriers not marked `after a fence.proxy.async` (they order no tile a TMA store reads)")
    if getattr(plan, "smem_shared_for_occupancy", ""):
        lines.append(f"shared memory: buffers with disjoint lifetimes share storage ({plan.smem_shared_for_occupancy})")
    for n in plan.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines) + "\n"


def layout_records(launch, plan) -> list:
    """The register layout or shared-memory swizzle of every tile buffer of the kernel
    (pictures: tilelang.tools.plot_layout.plot_kernel_layouts)."""
    from tilelang.transform.lower_trace import LayoutRecord
    decls = []
    walk(launch.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    out = []
    for b in decls:
        p = plan.placements.get(id(b))
        shape = tuple(E.const_int_value(d) for d in b.shape)
        if p is None or None in shape:
            continue
        if p.kind in REGISTER_FRAGMENT_KINDS and hasattr(p.acc, "regs"):
            out.append(LayoutRecord(b.name, b.scope, shape, b.dtype.name, p.acc, plan.nthreads))
        elif p.kind == "smem" and len(shape) >= 2:
            out.append(LayoutRecord(b.name, b.scope, shape, b.dtype.name, swizzle=f"sw{p.swizzle}" if p.swizzle else None))
    return out


def _copy_text(nest):
    """`A -> As` for a copy nest (its stored buffer and the buffers it loads)."""
    stores, loads = [], []

    def f(n):
        if isinstance(n, S.BufferStore) and n.buffer.name not in stores:
            stores.append(n.buffer.name)
        elif isinstance(n, E.BufferLoad) and n.buffer.name not in loads:
            loads.append(n.buffer.name)
    walk(nest, f)
    line = getattr(getattr(nest, "span", None), "line", None)
    text = f"{', '.join(loads)} -> {', '.join(stores) or '-'}" if loads else ', '.join(stores) or '-'   # (a fill: S)
    return text + (f" (line {line})" if line else "")


def _unfenced_inserted(launch) -> bool:
    """Whether plan/proxy_fences.py left an inserted barrier of `launch` unfenced."""
    found = []   # (an inserted barrier: one with a reason, plan/sync.py is_inserted_barrier)
    walk(launch.body, lambda n: found.append(n) if isinstance(n, S.Barrier) and n.reason is not None
         and not n.fence_async_proxy else None)
    return bool(found)
