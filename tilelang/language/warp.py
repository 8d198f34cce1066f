"""Warp- and block-collective intrinsics for kernels that index threads explicitly:
shuffles (`T.shfl_xor/down/up/sync`), warp reductions (`T.warp_reduce_*`), votes
(`T.any_sync`, `T.all_sync`, `T.ballot_sync`, `T.ballot`, `T.activemask`,
`T.match_any_sync`, `T.match_all_sync`), `T.shuffle_elect`, and the
block votes that are also barriers (`T.syncthreads_count/and/or`). They lower to the
CUDA intrinsics of the same names; every thread of the warp (block) must reach them.
The CPU backend, which runs such kernels one thread after another, rejects them."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer
from tilelang.ir.errors import TileLangError, located
from tilelang.ir.expr import BufferLoad, IntImm, call, convert, literal

FULL_MASK = 0xFFFFFFFF


def _at_call_site(value, what):
    """Evaluate the collective where the user wrote it, not where its value is used:
    `s = T.warp_reduce_sum(v)` followed by `if lane == 0: S[w] = s` must shuffle on every
    lane. The value goes to a fresh per-thread variable. Outside a kernel body (building
    expressions by hand) the call itself is the value."""
    b = B.current()
    if b is None:
        return value
    names = B.source_names("assign")   # the user's variable name, when there is one
    buf = Buffer(names[0] if names else what.split(".")[-1], (1,), value.dtype, "local.var")
    b.emit(S.DeclBuffer(buf))
    b.emit(S.BufferStore(buf, value, [IntImm(0)]))
    return BufferLoad(buf, [IntImm(0)])


def _expr(v):
    """An operand as an expression (a `T.alloc_var` variable reads its value)."""
    if isinstance(v, Buffer) and v.is_var():
        v = v.load()
    return convert(int(v) if isinstance(v, bool) else v)


def _value(v, what):
    v = _expr(v)
    if v.dtype.bits > 64 or v.dtype.name in ("bool",):
        raise TileLangError(f"{what} takes a numeric value, got {v.dtype}")
    return v


def _mask(mask):
    return literal(mask, "uint32") if isinstance(mask, int) else convert(mask)


def _shfl(name, value, lane, width, mask):
    v = _value(value, f"T.{name}")
    return _at_call_site(call(f"tl.{name}_sync" if name != "shfl_sync" else "tl.shfl_sync",
                              [_mask(mask), v, convert(lane), convert(width)], v.dtype), f"T.{name}")


def shfl_xor(value, delta, width=32, mask=FULL_MASK):
    """`value` of the lane whose index is this lane's xor `delta` (within `width` lanes)."""
    return _shfl("shfl_xor", value, delta, width, mask)


def shfl_down(value, delta, width=32, mask=FULL_MASK):
    """`value` of the lane `delta` above this one (its own past the end)."""
    return _shfl("shfl_down", value, delta, width, mask)


def shfl_up(value, delta, width=32, mask=FULL_MASK):
    """`value` of the lane `delta` below this one (its own before the start)."""
    return _shfl("shfl_up", value, delta, width, mask)


def shfl_sync(value, src_lane, width=32, mask=FULL_MASK):
    """`value` of lane `src_lane` (of each group of `width` lanes)."""
    return _shfl("shfl_sync", value, src_lane, width, mask)


def _tvm_shuffle(name, mask, value, lane, width, warp_size):
    from tilelang.ir.expr import const_int_value
    if const_int_value(warp_size) != 32:
        raise TileLangError(f"T.{name}: warp_size must be 32 (a CUDA warp), got {warp_size!r}")
    kind = {"tvm_warp_shuffle": "shfl_sync", "tvm_warp_shuffle_down": "shfl_down",
            "tvm_warp_shuffle_up": "shfl_up"}[name]
    return _shfl(kind, value, lane, width, mask)


# TVM's spellings (published kernels call them through `T.`): mask first, then the value,
# the lane (or offset), the width of the lane groups and the warp size
def tvm_warp_shuffle(mask, value, warp_id, width, warp_size=32):
    """`value` of lane `warp_id` of each group of `width` lanes (`__shfl_sync`)."""
    return _tvm_shuffle("tvm_warp_shuffle", mask, value, warp_id, width, warp_size)


def tvm_warp_shuffle_down(mask, value, offset, width, warp_size=32):
    """`value` of the lane `offset` above this one (`__shfl_down_sync`)."""
    return _tvm_shuffle("tvm_warp_shuffle_down", mask, value, offset, width, warp_size)


def tvm_warp_shuffle_up(mask, value, offset, width, warp_size=32):
    """`value` of the lane `offset` below this one (`__shfl_up_sync`)."""
    return _tvm_shuffle("tvm_warp_shuffle_up", mask, value, offset, width, warp_size)


def _warp_reduce(kind, value):
    v = _value(value, f"T.warp_reduce_{kind}")
    if kind in ("bitand", "bitor") and not v.dtype.is_int:
        raise TileLangError(f"T.warp_reduce_{kind} takes an integer, got {v.dtype}")
    return _at_call_site(call(f"tl.warp_reduce_{kind}", [v], v.dtype), f"T.warp_reduce_{kind}")


def warp_reduce_sum(value):
    """The sum of `value` over the 32 lanes of the warp, on every lane."""
    return _warp_reduce("sum", value)


def warp_reduce_max(value):
    return _warp_reduce("max", value)


def warp_reduce_min(value):
    return _warp_reduce("min", value)


def warp_reduce_bitand(value):
    return _warp_reduce("bitand", value)


def warp_reduce_bitor(value):
    return _warp_reduce("bitor", value)


def _predicate(p, what):
    p = _expr(p)
    if not (p.dtype.is_int or p.dtype.is_bool):
        raise located(TypeError, f"{what} requires an integer or boolean predicate, got {p.dtype}",
                      hint="compare it first, e.g. `x > 0`")
    return p


def any_sync(predicate, mask=FULL_MASK):
    """Non-zero when the predicate holds on any lane of `mask`."""
    return _at_call_site(call("tl.any_sync", [_mask(mask), _predicate(predicate, "T.any_sync")], "int32"),
                         "T.any_sync")


def all_sync(predicate, mask=FULL_MASK):
    """Non-zero when the predicate holds on every lane of `mask`."""
    return _at_call_site(call("tl.all_sync", [_mask(mask), _predicate(predicate, "T.all_sync")], "int32"),
                         "T.all_sync")


def ballot_sync(predicate, mask=FULL_MASK):
    """A uint64 whose bit n is set when the predicate holds on lane n."""
    return _at_call_site(call("tl.ballot_sync", [_mask(mask), _predicate(predicate, "T.ballot_sync")], "uint64"),
                         "T.ballot_sync")


def ballot(predicate):
    return ballot_sync(predicate)


def activemask():
    """A uint64 of the lanes executing this instruction."""
    return _at_call_site(call("tl.activemask", [], "uint64"), "T.activemask")


def syncthreads_count(predicate):
    """A block barrier that returns how many threads' predicate holds."""
    return _at_call_site(call("tl.syncthreads_count", [_predicate(predicate, "T.syncthreads_count")], "int32"),
                         "T.syncthreads_count")


def syncthreads_and(predicate):
    return _at_call_site(call("tl.syncthreads_and", [_predicate(predicate, "T.syncthreads_and")], "int32"),
                         "T.syncthreads_and")


def syncthreads_or(predicate):
    return _at_call_site(call("tl.syncthreads_or", [_predicate(predicate, "T.syncthreads_or")], "int32"),
                         "T.syncthreads_or")


def match_any_sync(value, mask=FULL_MASK):
    """A uint32 of the lanes in `mask` whose `value` equals this lane's."""
    v = _value(value, "T.match_any_sync")
    return _at_call_site(call("tl.match_any_sync", [_mask(mask), v], "uint32"), "T.match_any_sync")


def match_all_sync(value, mask=FULL_MASK):
    """`mask` when every lane in it holds the same `value`, else 0."""
    v = _value(value, "T.match_all_sync")
    return _at_call_site(call("tl.match_all_sync", [_mask(mask), v], "uint32"), "T.match_all_sync")


def shuffle_elect(thread_extent: int):
    """True on exactly one thread of each group of `thread_extent` consecutive threads
    (0: one thread of the whole block)."""
    from tilelang.language.kernel import get_thread_binding
    if not isinstance(thread_extent, int) or thread_extent < 0:
        raise TileLangError(f"T.shuffle_elect takes a non-negative int, got {thread_extent!r}")
    tx = get_thread_binding(0)
    return tx == 0 if thread_extent == 0 else tx % thread_extent == 0
