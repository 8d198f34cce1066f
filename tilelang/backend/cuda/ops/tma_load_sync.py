"""`T.copy(G[...], S, prefer_instruction="tma")` on sm_90a: the whole shared tile loaded by
one bulk copy (a tensor-map box, `tl::tma_load_Nd`, zero-filling what lies outside the
tensor as T.copy does; or one plain bulk copy of a contiguous run, `tl::tma_load_bulk`),
completing on the kernel's copy mbarrier, which every thread then waits on: the copy is
synchronous, as T.copy promises. tma_store.match_tile_copy says which copies qualify.

The mbarrier lives after the kernel's other shared memory; thread 0 initializes it at
the kernel's start (a block barrier publishes it), and a block-uniform phase bit
follows its completions. Readers of the tile before the copy are ordered by the
barrier the barrier planner puts before it (fenced for the async proxy, as in every
kernel with bulk copies: codegen_kernel.sync)."""
from __future__ import annotations

from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.transform.lower_tile_ops import PREFER_TMA
from tilelang.backend.cuda.ops.vector_copy import EVICTION_CODES
from tilelang.backend.cuda.ops.tma_store import match_tile_copy, _bytes, flat_origin, tensor_map_param, box_coords


def match(cg, st):
    """The bulk load (tma_store.TmaStore, to_global=False) that copy nest `st` can be, or None."""
    if not cg.options.bulk_tiles or not (isinstance(st, S.For) and st.kind == S.PARALLEL and st.annotations.get(PREFER_TMA)):
        return None
    return match_tile_copy(st, cg.plan, cg.param_bufs, to_global=False, launch=cg.launch, pointers=True)


def has_tma_load_sync(cg) -> bool:
    """Whether the kernel has a copy nest that becomes a bulk load (its recorded form,
    plan/copy_forms.py; a nest without one: whether it matches)."""
    from tilelang.backend.cuda.plan.copy_form import copy_form
    found = []

    def f(n):
        form = copy_form(n)
        if not found and (form.kind == "tma_load" if form is not None else match(cg, n) is not None):
            found.append(n)
    walk(cg.launch.body, f)
    return bool(found)


def _barrier(cg):
    """(mbarrier C name, phase C name), declared at the kernel's start on first use."""
    if getattr(cg, "_tma_sync_bar", None) is None:
        off = (cg.plan.smem_bytes + 7) // 8 * 8
        cg.plan.smem_bytes = off + 8
        bar = cg.names.fresh("tl_copy_bar")
        phase = cg.names.fresh("tl_copy_phase")
        cg.prologue += [f"unsigned long long* {bar} = reinterpret_cast<unsigned long long*>(tl_smem + {off});",
                        f"if (tl_tid == 0) {{ tl::mbar_init({bar}, 1); tl::mbar_init_fence(); }}",
                        "__syncthreads();",
                        f"unsigned {phase} = 0u;   // completions of {bar} so far, mod 2"]
        cg._tma_sync_bar = (bar, phase)
    return cg._tma_sync_bar


def emit_tma_load_sync(cg, st, eviction=None) -> bool:
    """The copy nest `st` as one bulk load that every thread waits for; False to leave
    it to the threads. `eviction`: T.copy's L2 priority (include/tl_cuda/cache_hint.h)."""
    if cg.async_copy or cg.range != cg.plan.regions.full:
        return False
    t = match(cg, st)
    if t is None:
        return False
    bar, phase = _barrier(cg)
    g, dst = t.dst, cg.buf_name(t.src)
    nbytes = _bytes(t.src)
    cg.aligned[g.name] = max(cg.aligned.get(g.name, 1), 16)
    cg.w("if (tl_tid == 0) {")
    cg.w(f"  tl::mbar_arrive_expect_tx({bar}, {nbytes});")
    hint = "" if eviction is None else f"_hint<{EVICTION_CODES[eviction]}>"
    if t.contiguous:
        cg.w(f"  tl::tma_load_bulk{hint}({dst}, {cg.buf_name(g)} + {flat_origin(cg, t)}, {nbytes}, {bar});")
    elif hint:
        cg.w(f"  tl::tma_load{hint}({dst}, &{tensor_map_param(cg, t)}, {bar}, {box_coords(cg, t)});")
    else:
        cg.w(f"  tl::tma_load_{g.ndim}d({dst}, &{tensor_map_param(cg, t)}, {bar}, {box_coords(cg, t)});")
    cg.w("}")
    cg.w(f"tl::mbar_wait({bar}, {phase});")
    cg.w(f"{phase} ^= 1u;")
    return True
