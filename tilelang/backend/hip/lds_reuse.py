"""LDS reuse for a kernel whose LDS buffers do not fit side by side: buffers whose live
ranges (over the kernel's top-level statements; a loop is one statement) do not overlap
share bytes of one LDS arena (a FlashAttention's output tile reuses the Q tile, which
the main loop was the last to read). First-fit by size, largest first; kernels that fit
without it keep one array per buffer.

`barriers.py` treats buffers whose bytes overlap as one (`KernelPlan.lds_key`), so the
write of the later buffer waits for every thread's last read of the earlier one."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk

ALIGN = 16


def _used_buffers(stmt):
    out = set()

    def f(n):
        if isinstance(n, (E.BufferLoad, S.BufferStore)):
            out.add(id(n.buffer))
        elif isinstance(n, TO.Gemm):
            out.update(id(r.buffer) for r in (n.A, n.B, n.C))
        elif isinstance(n, TO.Reduce):
            out.update((id(n.src.buffer), id(n.dst.buffer)))
    walk(stmt, f)
    return out


def live_ranges(body, ids):
    """{id(buffer): (first, last)} over the top-level statements of `body` (ids: the
    buffers asked about; a view counts as its base)."""
    stmts = body.stmts if isinstance(body, S.SeqStmt) else [body]
    ranges = {}
    for t, s in enumerate(stmts):
        if isinstance(s, S.DeclBuffer):
            continue
        for k in _used_buffers(s):
            k = ids.get(k)
            if k is not None:
                lo, hi = ranges.get(k, (t, t))
                ranges[k] = (min(lo, t), max(hi, t))
    return ranges


def plan_lds_reuse(plan, body, sizes):
    """Offsets of the LDS buffers (`sizes`: {id: bytes}) in one arena: {id: offset}, and
    the arena's bytes. A buffer never used still gets its own bytes."""
    base = {k: k for k in sizes}
    for k, b in plan.buffers.items():
        root = getattr(b, "alias_of", None)
        if root is not None and id(root) in sizes:
            base[k] = id(root)
    ranges = live_ranges(body, base)
    order = sorted(sizes, key=lambda k: -sizes[k])
    placed = []   # (offset, end, (first, last))
    offsets = {}
    for k in order:
        life = ranges.get(k, (-1, 1 << 30))
        size = -(-sizes[k] // ALIGN) * ALIGN
        busy = sorted((o, e) for o, e, (lo, hi) in placed if not (hi < life[0] or life[1] < lo))
        off = 0
        for o, e in busy:
            if off + size <= o:
                break
            off = max(off, e)
        offsets[k] = off
        placed.append((off, off + size, life))
    return offsets, max((e for _, e, _ in placed), default=0)


def overlap_classes(offsets, sizes):
    """{id: key}: buffers whose byte ranges overlap share a key (their accesses order
    against each other)."""
    parent = {k: k for k in offsets}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x
    items = sorted(offsets, key=lambda k: offsets[k])
    for i, a in enumerate(items):
        for b in items[i + 1:]:
            if offsets[b] >= offsets[a] + sizes[a]:
                break
            parent[find(a)] = find(b)
    return {k: find(k) for k in offsets}
