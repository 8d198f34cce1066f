"""The GEMM epilogue through shared memory and a TMA store (on by default; TILELANG_CUDA_EPILOGUE_TMA_STORE=0: off).

A GEMM kernel usually ends with `T.copy(C_local, C[by * bM, bx * bN])`: each thread stores
its accumulator fragment's pairs straight to global memory (4-byte stores, 8 rows of 16
bytes per warp instruction), after the main loop, with nothing to overlap them. This pass
rewrites that copy, where it follows a pipelined loop that feeds a gemm from shared tiles,
into the staged form users write by hand on Hopper:

    C_staged = T.alloc_shared((bM, bN), C.dtype)
    T.copy(C_local, C_staged)                       # register -> swizzled shared tile
    T.copy(C_staged, C[by * bM, bx * bN])           # one TMA store of the whole tile

The staged tile is only live after the loop, so the shared-memory planner places it over
the loop's ring slots (no extra shared memory); the pass stages a tile only where it fits
in those slots, only 16-bit outputs (fp16, bf16), and not where a copy of the loop says
`disable_tma=True`. Everything after this pass (layouts, the TMA store, its fences and
barriers) is what the hand-written staged kernel gets."""
from __future__ import annotations

from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion, full_region
from tilelang.ir.expr import const_int_value
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import function_pass

def _const_shape(extents):
    out = [const_int_value(e) for e in extents]
    return None if any(v is None for v in out) else out


def _ring_bytes(loop):
    """Bytes of the shared tiles that `loop`'s copies fill, times its stages: the shared
    memory that is dead once the loop is done."""
    spec = loop.annotations.get("pipeline")
    stages = getattr(spec, "num_stages", None) or 1
    seen, total = set(), 0
    copies, gemms = [], []
    walk(loop.body, lambda n: copies.append(n) if isinstance(n, TO.Copy)
         else gemms.append(n) if isinstance(n, TO.Gemm) else None)
    if not gemms:
        return 0
    for c in copies:
        if c.annotations.get("disable_tma"):   # the user keeps this GEMM off TMA: its epilogue too
            return 0
        b = c.dst.buffer
        if b.scope == "shared" and c.src.buffer.scope == "global" and b.uid not in seen:
            shape = _const_shape(b.shape)
            if shape is None:
                return 0
            seen.add(b.uid)
            n = 1
            for d in shape:
                n *= d
            total += n * b.dtype.itemsize
    return total * stages


def _stageable(copy, ring_bytes):
    """The staged tile's shape where `copy` is a whole fragment to a 2-D global tile that a
    TMA store can write and the ring's shared memory can hold, else None."""
    src, dst = copy.src, copy.dst
    if src.buffer.scope != "local.fragment" or dst.buffer.scope != "global" or copy.annotations:
        return None
    if len(dst.ranges) != 2 or _const_shape(dst.buffer.shape) is None:
        return None
    ext = _const_shape(dst.extents)
    if ext is None or ext != _const_shape(src.buffer.shape) or \
            any(const_int_value(s) != 0 for s in src.starts):
        return None
    item = dst.buffer.dtype.itemsize
    if item != 2:   # fp16 / bf16: the staged tile takes the 128B swizzle in 64-column strips (a wider
        return None  # element would give an unswizzled tile: bank conflicts on the staging stores)
    if (_const_shape(dst.buffer.shape)[-1] * item) % 16 or (ext[-1] * item) % 16:
        return None   # TMA: global rows 16-byte aligned
    if ext[0] * ext[1] * item > ring_bytes:
        return None
    return ext


def _stage_body(body):
    stmts = list(body.stmts) if isinstance(body, S.SeqStmt) else [body]
    ring, out, changed = 0, [], False
    for st in stmts:
        if isinstance(st, S.For) and st.kind == S.PIPELINED:
            ring = max(ring, _ring_bytes(st))
        shape = _stageable(st, ring) if ring and isinstance(st, TO.Copy) else None
        if shape is None:
            out.append(st)
            continue
        dst = st.dst.buffer
        staged = Buffer(f"{st.src.buffer.name}_staged", shape, dst.dtype, scope="shared")
        decl = S.DeclBuffer(staged)
        to_shared = TO.Copy(st.src, full_region(staged))
        to_global = TO.Copy(full_region(staged), BufferRegion(dst, st.dst.ranges))
        for n in (decl, to_shared, to_global):
            n.span = st.span
        out += [decl, to_shared, to_global]
        changed = True
    return S.SeqStmt(out) if changed else None


@function_pass("stage_gemm_epilogue")
def stage_gemm_epilogue(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import cuda_context, with_launches
    found = cuda_context(func, ctx)
    if found is None:
        return func
    _, options, stmts = found
    if not (options.epilogue_tma_store and options.tma):
        return func
    out, changed = [], False
    for launch in stmts:
        body = _stage_body(launch.body) if isinstance(launch, S.KernelLaunch) else None
        if body is not None:
            new = S.KernelLaunch(launch.grid, launch.threads, launch.block_vars, launch.thread_vars, body,
                                 dict(launch.annotations))
            new.span = launch.span
            launch, changed = new, True
        out.append(launch)
    return with_launches(func, out) if changed else func
