"""`T.tvm_thread_allreduce` -> CUDA: a reduction over the threads of a block that
differ only along the named thread axes ("a group"); every thread gets its group's
result.

The thread at (x, y, z) has linear index x + X*y + X*Y*z. One reduced axis with a
power-of-two stride s and extent e: its members are s apart, so a butterfly of
`__shfl_xor_sync` over offsets s*w/2 .. s combines the w = min(e, 32/s) members that
share a warp. When the group spans several warps (w < e), every thread then writes
its partial to shared scratch and, after a barrier, combines the e/w partials of its
group (the members whose index along the axis is a multiple of w). Reduced axes that
form a prefix (x, or x and y) are one axis of stride 1. Anything else (strides or
extents that are not powers of two, partial warps) goes through shared memory only.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.backend.cuda.emit.expr import ctype, cast_str


def _pow2(v):
    return v > 0 and v & (v - 1) == 0


@dataclass
class AllReducePlan:
    """How one allreduce runs (a pure function of the block shape: tests replay it)."""
    axes: list       # [(stride, extent, dim)] reduced; dim None: the prefix axes merged (index tid % extent)
    offsets: list    # xor offsets of the warp butterfly, in order
    nthreads: int
    in_warp: int     # members of a group the butterfly combines (along the single axis)
    shared: bool     # partials left to combine through shared memory

    def index(self, tid, dims):
        """Each axis's index of linear thread `tid` (Python mirror of the C expressions)."""
        out = []
        for s, e, d in self.axes:
            out.append(tid % e if d is None else (tid // s) % dims[d])
        return out

    @property
    def mask(self):
        return "0xffffffffu" if self.nthreads >= 32 else f"{(1 << self.nthreads) - 1:#x}u"


def plan_allreduce(dims, reduced, nthreads) -> AllReducePlan:
    """dims: the block's (x, y, z) extents; reduced: the reduced axes (0, 1, 2)."""
    dims = list(dims) + [1] * (3 - len(dims))
    strides = [1, dims[0], dims[0] * dims[1]]
    reduced = sorted(reduced)
    if reduced == list(range(len(reduced))):  # a prefix: threads [k*e, (k+1)*e) form group k
        ext = 1
        for d in reduced:
            ext *= dims[d]
        axes = [(1, ext, None)]
    else:
        axes = [(strides[d], dims[d], d) for d in reduced]
    in_warp = 1
    if len(axes) == 1:
        s, e, _ = axes[0]
        whole_warps = nthreads % 32 == 0 or (nthreads < 32 and _pow2(nthreads))
        if _pow2(s) and _pow2(e) and s < 32 and whole_warps:
            in_warp = min(e, 32 // s, nthreads // s)
    offsets = []
    k = in_warp // 2
    while k >= 1:
        offsets.append(k * axes[0][0])
        k //= 2
    group = 1
    for _, e, _ in axes:
        group *= e
    return AllReducePlan(axes, offsets, nthreads, in_warp, in_warp < group)


def _c_index(axis):
    s, e, d = axis
    return f"(tl_tid % {e})" if d is None else f"threadIdx.{'xyz'[d]}"


def emit_thread_allreduce(kc, st, block):
    if not block:
        raise NotImplementedError("T.tvm_thread_allreduce under a thread-dependent branch or loop: every thread "
                                  "of the block must reach it")
    nt = kc.plan.nthreads
    reduced = [i for i, v in enumerate(kc.launch.thread_vars) if any(v is tv for tv in st.thread_vars)]
    if len(reduced) != len(st.thread_vars):
        raise NotImplementedError("T.tvm_thread_allreduce: its thread indices are not this kernel's")
    plan = plan_allreduce([int(t) for t in kc.launch.threads], reduced, nt)
    dt = st.identity.dtype
    ct = ctype(dt)
    acc = kc.names.fresh("tl_red")
    other = kc.names.fresh("tl_red_other")
    kc.names.alias(st.lhs, acc)
    kc.names.alias(st.rhs, other)
    combine = kc.expr(st.combine)
    kc.w("{")
    kc.indent += 1
    kc.w(f"{ct} {acc} = {cast_str(st.value.dtype, dt, kc.expr(st.value))};")
    cond = kc.expr(st.cond)
    if cond != "true":  # threads whose condition is false contribute the identity
        kc.w(f"if (!({cond})) {acc} = {kc.expr(st.identity)};")
    for off in plan.offsets:
        kc.w(f"{{ {ct} {other} = __shfl_xor_sync({plan.mask}, {acc}, {off}); {acc} = {combine}; }}")
    if plan.shared:
        _through_shared(kc, ct, acc, other, combine, plan)
    kc.w(f"{kc.access(st.dst)} = {cast_str(dt, st.dst.buffer.dtype, acc)};")
    kc.indent -= 1
    kc.w("}")


def _through_shared(kc, ct, acc, other, combine, plan):
    """Combine the group's partials (one per `in_warp` members along the single axis,
    or every member) through shared scratch: write, barrier, read, barrier."""
    nt = plan.nthreads
    buf = _scratch(kc, ct, nt)   # the previous user ended with a barrier
    kc.w(f"{buf}[tl_tid] = {acc};")
    kc.sync()
    base = " - ".join(["tl_tid"] + [f"{_c_index(a)} * {a[0]}" for a in plan.axes])
    b = kc.names.fresh("tl_red_base")
    kc.w(f"const int {b} = {base};")
    kc.w(f"{acc} = {buf}[{b}];")
    loops = [(kc.names.fresh("tl_j"), s, e) for s, e, _ in plan.axes]
    if len(loops) == 1:
        j, s, e = loops[0]
        kc.w(f"for (int {j} = 1; {j} < {e // plan.in_warp}; ++{j}) {{ {ct} {other} = "
             f"{buf}[{b} + {j} * {s * plan.in_warp}]; {acc} = {combine}; }}")
    else:
        flat = " + ".join(f"{j} * {s}" for j, s, _ in loops)
        for j, _, e in loops:
            kc.w(f"for (int {j} = 0; {j} < {e}; ++{j}) {{")
            kc.indent += 1
        kc.w(f"if ({flat} != 0) {{ {ct} {other} = {buf}[{b} + {flat}]; {acc} = {combine}; }}")
        for _ in loops:
            kc.indent -= 1
            kc.w("}")
    kc.sync()


def _scratch(kc, ct, nt, per_thread=8):
    """`per_thread` bytes (8 at least) per thread of shared memory after the kernel's
    other shared data (one area per kernel, as large as its largest user needs, reused
    by every allreduce and finalize: they are separated by barriers), viewed as `ct`."""
    off = getattr(kc, "_allreduce_off", None)
    if off is None:
        off = kc._allreduce_off = (kc.plan.smem_bytes + 15) // 16 * 16
    kc.plan.smem_bytes = max(kc.plan.smem_bytes, off + nt * max(8, per_thread))
    view = kc.names.fresh("tl_red_smem")
    kc.w(f"{ct}* {view} = reinterpret_cast<{ct}*>(tl_smem + {off});")
    return view


_COMBINE = {"sum": "({a} + {b})", "max": "tl::max({a}, {b})", "min": "tl::min({a}, {b})",
            "bitand": "({a} & {b})", "bitor": "({a} | {b})", "bitxor": "({a} ^ {b})"}


def emit_finalize_reducer(kc, op):
    """`T.finalize_reducer`: each slot of a register reducer is replicated over a group of
    consecutive, aligned threads (the threads of a tile row, tile_layout.TileRows; or
    every thread, Scalar); combine the copies with a butterfly over the group's lanes
    (and, groups wider than a warp, through shared scratch)."""
    from tilelang.backend.cuda.layout.tile import TileRows, Scalar
    buf = op.buffer
    p = kc.placement(buf)
    nt = kc.plan.nthreads
    if p is not None and p.kind == "tile" and isinstance(p.acc, TileRows):
        regs, g = p.acc.regs, p.acc.tile.group
    elif p is not None and p.kind == "tile" and isinstance(p.acc, Scalar):
        regs, g = 1, nt
    elif p is not None and p.kind == "smem":
        # one shared copy that every contribution reached atomically (codegen_kernel's
        # shared_reducer_update): complete once every thread has contributed
        kc.sync()
        return
    else:
        where = "shared memory" if p is None else f"the {p.kind} layout"
        raise NotImplementedError(f"T.finalize_reducer of `{buf.name}` in {where}: the CUDA backend combines "
                                  f"reducers held as tile rows or one replicated value (a T.Parallel loop over "
                                  f"a 2-D tile that updates `{buf.name}[i]`)")
    if g == 1:
        return
    if not (_pow2(g) and (g <= 32 or (g % 32 == 0 and nt % 32 == 0)) and nt % min(g, 32) == 0):
        raise NotImplementedError(f"T.finalize_reducer of `{buf.name}`: its copies span {g} threads")
    ct = ctype(buf.dtype)
    name = kc.buf_name(buf)
    comb = _COMBINE[op.op]
    s = kc.names.fresh("tl_s")
    v = kc.names.fresh("tl_v")
    gw = min(g, 32)
    B = getattr(op, "batch", 1) or 1
    kc.w("#pragma unroll")
    if 1 < B <= gw and B & (B - 1) == 0 and regs % B == 0:
        # batch=B: B slots exchanged together within the warp (tl::group_allreduce_rows)
        from tilelang.backend.cuda.ops.reduce import warp_op
        kc.w(f"for (int {s} = 0; {s} < {regs}; {s} += {B}) {{")
        kc.indent += 1
        kc.w(f"{ct} {v}[{B}];")
        kc.w("#pragma unroll")
        kc.w(f"for (int tl_b = 0; tl_b < {B}; ++tl_b) {v}[tl_b] = {name}[{s} + tl_b];")
        kc.w(f"tl::group_allreduce_rows<{B}, {gw}>({v}, {warp_op(op.op)}(), tl_tid & 31);")
        kc.w("#pragma unroll")
        kc.w(f"for (int tl_b = 0; tl_b < {B}; ++tl_b) {name}[{s} + tl_b] = {v}[tl_b];")
    else:
        kc.w(f"for (int {s} = 0; {s} < {regs}; ++{s}) {{")
        kc.indent += 1
        kc.w(f"{ct} {v} = {name}[{s}];")
        m = gw // 2
        while m >= 1:
            kc.w(f"{v} = {comb.format(a=v, b=f'tl::shfl_xor({v}, {m})')};")
            m //= 2
        kc.w(f"{name}[{s}] = {v};")
    kc.indent -= 1
    kc.w("}")
    if g > 32:
        _combine_warps(kc, name, ct, comb, regs, g, nt, buf.dtype.itemsize)


def finalize_round_slots(regs, nt, itemsize):
    """Slots whose per-warp copies one barrier round exchanges: all of them, unless
    their scratch (one value per thread and slot) would exceed FINALIZE_ROUND_BYTES."""
    return max(1, min(regs, FINALIZE_ROUND_BYTES // (nt * max(4, itemsize))))


FINALIZE_ROUND_BYTES = 32768


def _combine_warps(kc, name, ct, comb, regs, g, nt, itemsize):
    """One copy per warp is left of each slot: every thread publishes its slots in shared
    scratch, one barrier, each thread combines the g/32 warps of its group; the slots go
    in rounds (finalize_round_slots), two barriers per round, not per slot."""
    K = finalize_round_slots(regs, nt, itemsize)
    buf_s = _scratch(kc, ct, nt, K * max(4, itemsize))   # its previous user ended with a barrier
    w0 = kc.names.fresh("tl_w0")
    kc.w(f"const int {w0} = (tl_tid / {g}) * {g};")
    for r0 in range(0, regs, K):
        k = min(K, regs - r0)
        s = kc.names.fresh("tl_s")
        kc.w("#pragma unroll")
        kc.w(f"for (int {s} = 0; {s} < {k}; ++{s}) {buf_s}[{s} * {nt} + tl_tid] = {name}[{r0} + {s}];")
        kc.sync()
        kc.w("#pragma unroll")
        kc.w(f"for (int {s} = 0; {s} < {k}; ++{s}) {{")
        kc.indent += 1
        v = kc.names.fresh("tl_v")
        w = kc.names.fresh("tl_w")
        kc.w(f"{ct} {v} = {buf_s}[{s} * {nt} + {w0}];")
        kc.w(f"for (int {w} = 1; {w} < {g // 32}; ++{w}) "
             f"{v} = {comb.format(a=v, b=f'{buf_s}[{s} * {nt} + {w0} + {w} * 32]')};")
        kc.w(f"{name}[{r0} + {s}] = {v};")
        kc.indent -= 1
        kc.w("}")
        kc.sync()   # before the next round or the scratch's next user overwrites it
