"""`T.copy`: a tile copy between any two scopes (casting when dtypes differ)."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion, to_region
from tilelang.ir.expr import BufferLoad, const_int_value
from tilelang.ir.errors import ShapeMismatchError, TileLangError


def _squeeze(exts):
    return [e for e in exts if const_int_value(e) != 1]


def _fmt(exts):
    return "[" + ", ".join(str(const_int_value(e) if const_int_value(e) is not None else e) for e in exts) + "]"


def _check_operand(x, what):
    if not isinstance(x, (Buffer, BufferRegion, BufferLoad)):
        raise TileLangError(f"T.copy {what} must be a buffer, a slice `A[a:b, ...]` or a start "
                            f"index `A[i, j]`, got {type(x).__name__}")
    if isinstance(x, Buffer) and x.is_var():
        raise TileLangError(f"T.copy {what} `{x.name}` is a scalar variable",
                            hint="assign scalars directly: `x = A[i]`")


def copy_regions(src, dst):
    _check_operand(src, "source")
    _check_operand(dst, "destination")
    if isinstance(src, BufferLoad) and isinstance(dst, BufferLoad):
        # two elements: copy one element (each side a region of extent 1)
        return to_region(src), to_region(dst)
    if isinstance(src, BufferLoad):
        d = to_region(dst)
        s = to_region(src, d.extents)
    elif isinstance(dst, BufferLoad):
        s = to_region(src)
        d = to_region(dst, s.extents)
    else:
        s, d = to_region(src), to_region(dst)
    se, de = _squeeze(s.extents), _squeeze(d.extents)
    ok = len(se) == len(de)
    if ok:
        for a, b in zip(se, de):
            ca, cb = const_int_value(a), const_int_value(b)
            if ca is not None and cb is not None and ca != cb:
                ok = False
    if not ok:
        b = B.current()
        if b is not None and b.kernel_depth == 0 and getattr(b, "saw_structured", False):
            return s, d  # implicit-kernel form: the implicit_kernel pass picks the block's tile
        ex = ", ".join(f"{chr(ord('i') + k)}:{chr(ord('i') + k)} + {e}" for k, e in enumerate(
            str(const_int_value(e) if const_int_value(e) is not None else e) for e in de))
        raise ShapeMismatchError(
            f"T.copy shapes do not match: source {s.buffer.name} {_fmt(s.extents)} vs destination "
            f"{d.buffer.name} {_fmt(d.extents)}",
            hint=f"copy a region with the destination's extents, e.g. T.copy({s.buffer.name}[{ex}], "
                 f"{d.buffer.name}), or give a start index: T.copy({s.buffer.name}[i, j], {d.buffer.name})")
    return s, d


# T.copy(..., eviction_policy=...): the L2 cache hint of the copy's global accesses
EVICTION_POLICIES = ("evict_normal", "evict_first", "evict_last")


def copy(src, dst, coalesced_width=None, disable_tma=False, eviction_policy=None, loop_layout=None,
         annotations=None, **kwargs):
    b = B.require("T.copy")
    s, d = copy_regions(src, dst)
    ann = dict(annotations or {})
    if disable_tma:
        ann["disable_tma"] = True
    if coalesced_width:
        import operator
        try:
            width = operator.index(coalesced_width)
        except TypeError:
            width = 0
        if isinstance(coalesced_width, bool) or width < 1:
            raise ValueError(f"T.copy: coalesced_width must be a positive int (elements per vector), "
                             f"got {coalesced_width!r}")
        ann["coalesced_width"] = width
    if eviction_policy is not None:
        if eviction_policy not in EVICTION_POLICIES:
            raise ValueError(f"T.copy: eviction_policy must be one of {', '.join(map(repr, EVICTION_POLICIES))}, "
                             f"got {eviction_policy!r}")
        ann["eviction_policy"] = eviction_policy
    if loop_layout is not None:   # a backend honours it or says it cannot (cuda: plan/copy_forms.py)
        ann["loop_layout"] = loop_layout
    if kwargs.get("prefer_instruction") is not None:   # "tma": a bulk copy where it applies
        ann["prefer_instruction"] = kwargs["prefer_instruction"]
    b.emit(TO.Copy(s, d, ann))


def async_copy(src, dst, **kwargs):
    """A global -> shared copy meant for cp.async. Here it completes like T.copy (the
    compiler orders it with the reads after it); other scopes are an error when the
    kernel compiles, as in the published package."""
    ann = dict(kwargs.pop("annotations", None) or {})
    ann["async_copy"] = True   # scopes checked when lowered (transform/lower_tile_ops.py)
    copy(src, dst, annotations=ann, **kwargs)


def tma_copy(src, dst, *, barrier=None, cluster_mask=None, leader_scope_threads=None, eviction_policy=None,
             annotations=None):
    """A copy whose completion the kernel tracks itself: global -> shared with `barrier`
    (an mbarrier): on sm_90a a bulk tensor copy (TMA) issued by the first thread of the
    range running it, announcing its bytes on `barrier` (T.mbarrier_expect_tx) without
    arriving; the threads then arrive and wait on `barrier` as written. Where TMA does
    not apply (layout, dtype, arch) the running threads copy the tile themselves before
    their arrival, which the barrier orders the same way.

    `cluster_mask` (a bitmask of ranks in the block's cluster, loads only): every block of
    the mask receives the tile its lowest-ranked block addresses (a TMA multicast in the
    published package), each announcing the bytes on its own `barrier`; see
    transform/lower_cluster_mask.py for how it runs here."""
    b = B.require("T.tma_copy")
    s, d = copy_regions(src, dst)
    ann = dict(annotations or {})
    ann[TO.IS_TMA_COPY] = True   # which copies may fill fp4-unpacked shared memory (lower_tile_ops.py)
    if cluster_mask is not None:
        from tilelang.ir.errors import located
        if not isinstance(cluster_mask, int) or isinstance(cluster_mask, bool) or cluster_mask <= 0:
            raise located(ValueError, f"T.tma_copy: cluster_mask must be a positive int bitmask, got {cluster_mask!r}")
        if barrier is None or s.buffer.scope != "global" or not d.buffer.scope.startswith("shared"):
            raise TileLangError("T.tma_copy: cluster_mask multicasts a load (global -> shared with a barrier) only",
                                hint="drop cluster_mask for stores, or pass barrier=<mbarrier> for a load")
        ann[TO.CLUSTER_MASK] = cluster_mask
    if barrier is not None:
        from tilelang.language.sync import _mbar, in_ws_scope
        bar = _mbar(barrier, "tma_copy")
        if not in_ws_scope():   # T.ws scopes run in program order (language/sync.py)
            ann["tma_barrier"] = bar
    b.emit(TO.Copy(s, d, ann))
