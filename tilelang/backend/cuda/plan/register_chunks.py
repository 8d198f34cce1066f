"""How the chunks of a register-tile loop run, decided once, as an IR-to-IR pass
(`plan_register_chunks`, right after plan_copy_forms).

A T.Parallel nest over thread tiles (layout/tile.py) is printed chunk by chunk
(emit/tile_loops.py): chunk c holds V consecutive elements of a row. Where
plan_copy_forms gave the nest no vector width (`registers xW`), the chunk's V elements
run one at a time, except where this pass records on the nest (annotation
`register_chunks`, printed with the nest in the IR and the lower trace,
`# loop -> chunks: ...`) that:

- `cast pairs`: the body converts one element of a tile into another tile of the same
  layout (`B_local[i, j] = T.cast(A_local[i, j], ...)`) and the dtype pair has a two-lane
  conversion (ops/vector_cast.py): the chunk converts two elements at a time;
- `atomic add xW`: the body adds one element into W consecutive, aligned elements of a
  global tensor (ops/vector_atomic.py): V / W vector atomics a chunk;
- `shared loads hoisted (Xs, ...)`: the body reads unswizzled shared tiles of the loop's
  own shape at the loop's own (i, j) and does not write them: one vector load of each a
  chunk (in bounds: the tile has the loop's shape), which the element loads then read.

The pass walks the launch by the block-level rule the code generator prints by
(analysis/block_level.py: the cooperative nests, the statements of a pipelined body), on the
nodes plan/plan_kernels.py made fresh for the CUDA passes, in place."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.analysis.block_level import BlockLevelWalk
from tilelang.backend.cuda.analysis.facts import parallel_nest
from tilelang.backend.cuda.layout.annotated import AnnotatedTile
from tilelang.backend.cuda.layout.tile import Scalar, canon_shape
from tilelang.backend.cuda.ops.register_vector import chunk_geometry, free_row_fragments
from tilelang.backend.cuda.ops.vector_access import _has, _cond_ok, consecutive
from tilelang.backend.cuda.plan.copy_form import copy_form
from tilelang.backend.cuda.layout import REGISTER_FRAGMENT_KINDS

REGISTER_CHUNKS = "register_chunks"


@dataclass(frozen=True, eq=False)
class RegisterChunks:
    kind: str            # "cast_pairs", "atomic" or "elements"
    width: int = 0       # atomic: elements per vector atomic add
    hoisted: tuple = ()  # elements: one load (E.BufferLoad) of each shared tile read as one vector a chunk

    def same(self, other):
        return other is not None and (self.kind, self.width) == (other.kind, other.width) and \
            [ld.buffer for ld in self.hoisted] == [ld.buffer for ld in other.hoisted]

    def __str__(self):
        if self.kind == "cast_pairs":
            return "chunks: cast pairs (two-lane conversions)"
        if self.kind == "atomic":
            return f"chunks: atomic add x{self.width}"
        return "chunks: shared loads hoisted (" + ", ".join(ld.buffer.name for ld in self.hoisted) + \
            "; one vector a chunk)"


def register_chunks(st):
    """The RegisterChunks this pass recorded on nest `st`, or None (element by element)."""
    return st.annotations.get(REGISTER_CHUNKS) if isinstance(st, S.For) else None


class _Kernel:
    """What the decisions read of one kernel: placements and strides (its plan), the arch."""

    def __init__(self, plan, target):
        self.plan, self.target = plan, target

    def placement(self, buf):
        return self.plan.placements.get(id(buf))

    def strides(self, buf):
        p = self.placement(buf)
        return p.strides if p is not None and p.strides is not None else buf.get_strides()


def _register_buffers(k, body):
    out = {}

    def f(n):
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and \
                getattr(k.placement(n.buffer), "kind", None) in REGISTER_FRAGMENT_KINDS:
            out.setdefault(id(n.buffer), n.buffer)
    walk(body, f)
    return list(out.values())


def decide(k, st):
    """The RegisterChunks of cooperative nest `st` (None: element by element, or not a
    chunk loop of register tiles, or chunks copied as vectors: plan_copy_forms' width)."""
    vars_, _, exts, body = parallel_nest(st)
    regs = _register_buffers(k, body)
    if not regs or k.placement(regs[0]).kind != "tile":
        return None
    exts = [E.const_int_value(e) for e in exts]
    lays = {id(b): k.placement(b).acc for b in regs}
    if any(isinstance(L, AnnotatedTile) for L in lays.values()):
        return None     # a user's Fragment runs element by element (emit/tile_loops.py emit_annotated_loop)
    if all(isinstance(L, Scalar) for L in lays.values()) or all(e == 1 for e in exts):
        return None
    L, mode, cv = chunk_geometry(vars_, exts, body, regs, lays)
    form = copy_form(st)
    if mode == "rows" or (form is not None and form.kind == "registers" and form.width):
        return None
    jv = cv[-1]
    if not free_row_fragments(body, regs, lays, mode, cv):
        if register_cast(body, L, lays) is not None:
            return RegisterChunks("cast_pairs")
        W = atomic_width(k, body, jv, L)
        if W:
            return RegisterChunks("atomic", W)
    hoisted = hoisted_shared_loads(k, body, cv, L)
    return RegisterChunks("elements", hoisted=hoisted) if hoisted else None


def register_cast(body, L, lays):
    """(store, load) when the body converts one register-tile element into another tile of
    the same layout (`B_local[i] = T.cast(A_local[i], ...)`) and the pair has a two-lane
    conversion (ops/vector_cast.py); the chunk's V elements are consecutive in both."""
    from tilelang.backend.cuda.ops.vector_cast import can_pair
    if L.V % 2 or not isinstance(body, S.BufferStore) or not isinstance(body.value, E.Cast):
        return None
    load = body.value.value
    if not isinstance(load, E.BufferLoad) or not can_pair(load.buffer.dtype, body.buffer.dtype):
        return None
    ls, ld = lays.get(id(body.buffer)), lays.get(id(load.buffer))
    if ls is None or ld is None or isinstance(ls, Scalar) or type(ls) is not type(ld):
        return None
    if [id(i) for i in body.indices] != [id(i) for i in load.indices] or \
            not all(isinstance(i, E.Var) for i in body.indices):
        return None
    return body, load


def atomic_width(k, body, jv, L):
    """Elements per vector atomic add when the body adds one element of a register tile
    (or any per-element value) into consecutive global elements along `jv` (0: none)."""
    from tilelang.backend.cuda.ops import vector_atomic
    m = vector_atomic.match(body)
    if m is None:
        return 0
    guard, call = m
    dst = call.args[0]
    W = vector_atomic.lanes(dst.buffer.dtype, k.target.arch)
    while W >= 2 and L.V % W:
        W //= 2
    if W < 2:
        return 0
    strides = k.strides(dst.buffer)
    if E.const_int_value(strides[-1]) != 1 or any(_has(i, jv) for i in dst.indices[:-1]):
        return 0
    if any(E.const_int_value(x) is None or E.const_int_value(x) % W for x in strides[:-1]):
        return 0
    if not consecutive(dst.indices[-1], jv, W) or (guard is not None and not _cond_ok(guard, jv, W)):
        return 0
    return W


def hoisted_shared_loads(k, body, cv, L):
    """One load of each shared tile that the body reads at the loop's own (i, j) only and
    does not write, unswizzled, of the loop's shape, a chunk of it 2 bytes or more (16-byte
    pieces beyond 16): read as one vector a chunk."""
    loads, written = {}, set()

    def f(n):
        if isinstance(n, S.BufferStore):
            written.add(id(n.buffer))
        elif isinstance(n, E.BufferLoad):
            loads.setdefault(id(n.buffer), []).append(n)
    walk(body, f)
    out = []
    for bid, ls in loads.items():
        b = ls[0].buffer
        p = k.placement(b)
        if bid in written or p is None or p.kind != "smem" or p.swizzle or b.dtype.bits < 8:
            continue
        if canon_shape(b) != ([L.M, L.N] if L.M > 1 else [L.N]) or len(cv) != len(canon_shape(b)):
            continue
        ok = True
        for ld in ls:
            ix = [i for i, d in zip(ld.indices, b.shape) if E.const_int_value(d) != 1]
            rest = [i for i, d in zip(ld.indices, b.shape) if E.const_int_value(d) == 1]
            ok &= all(i is v for i, v in zip(ix, cv)) and all(E.const_int_value(i) == 0 for i in rest)
        strides = k.strides(b)
        ok = ok and E.const_int_value(strides[-1]) == 1 and \
            all(E.const_int_value(x) is not None and E.const_int_value(x) % L.V == 0 for x in strides[:-1])
        nbytes = L.V * b.dtype.itemsize
        if not ok or nbytes < 2 or (nbytes > 16 and nbytes % 16):
            continue
        out.append(ls[0])
    return tuple(out)


class _Planner(BlockLevelWalk):
    """Walks a launch by the block-level rule (analysis/block_level.py) and records each
    cooperative nest's chunks."""

    def __init__(self, k):
        super().__init__(k.plan)
        self.k = k
        self.records = {}   # id(nest) -> (nest, RegisterChunks)

    def cooperative_nest(self, nest):
        rec = decide(self.k, nest)
        if rec is not None:
            self.records[id(nest)] = (nest, rec)


@function_pass("plan_register_chunks")
def plan_register_chunks(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches

    def rewrite(launch, plan, target, options):
        p = _Planner(_Kernel(plan, target))
        p.visit(launch.body, True)
        for nest, rec in p.records.values():
            nest.annotations[REGISTER_CHUNKS] = rec   # a node plan_kernels made for the plan
        return launch
    return map_planned_launches(func, ctx, rewrite)


__all__ = ["REGISTER_CHUNKS", "RegisterChunks", "register_chunks", "plan_register_chunks"]
