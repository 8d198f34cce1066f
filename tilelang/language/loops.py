"""Loop constructors: `T.serial`, `T.Parallel`, `T.Pipelined`, `T.unroll`,
`T.vectorized` (and `T.Serial`, `T.Unroll`, `T.Vectorized`), `T.grid`. Iterating one
records an IR loop (the body runs once)."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.expr import Var, convert, IntImm, PrimExpr, maximum as _maximum, minimum as _minimum
from tilelang.ir.dtypes import int32, int64
from tilelang.ir.errors import TileLangError, located
from tilelang.ir.pipeline_spec import PIPELINE, make_pipeline_spec
from tilelang.ir.span import current_span
from tilelang.arith.simplify import simplify


def _integer(x, what):
    """A loop bound as an integer expression; a float (`N / 3`) is a located TypeError."""
    if isinstance(x, bool):
        return convert(int(x))
    if isinstance(x, float):
        raise located(TypeError, f"{what} must be an integer, got the float {x!r}",
                      hint="use // (floor division) or T.ceildiv for sizes")
    e = convert(x)
    if not e.dtype.is_int:
        raise located(TypeError, f"{what} must be an integer expression, got {e.dtype} ({e})",
                      hint="cast it with T.cast(x, 'int32') or use // for sizes")
    return e


class LoopFrame(B.Frame):
    def __init__(self, kind, mins, extents, step=None, annotations=None, span=None):
        self.kind = kind
        self.span = span
        self.mins = [_integer(m, "a loop start") for m in mins]
        self.extents = [simplify(_integer(e, "a loop extent")) for e in extents]
        self.step = convert(step) if step is not None else None
        self.annotations = annotations or {}

    def _vars(self):
        names = B.source_names("for") or []
        out = []
        for i, e in enumerate(self.extents):
            dt = int64 if (e.dtype is int64 or self.mins[i].dtype is int64) else int32
            out.append(Var(names[i] if i < len(names) else f"i{i}", dt))
        return out

    def iterate(self):
        b = B.require("a T.serial / T.Parallel / T.Pipelined loop")
        vars_ = self._vars()
        if "structure" in self.annotations:
            b.saw_structured = True
        b.push()
        b.loop_kinds.append("ir")
        parallel = self.kind == S.PARALLEL
        b.parallel_depth += parallel
        vectorized = self.kind == S.VECTORIZED
        b.vectorized_depth += vectorized
        completed = False
        try:
            yield vars_[0] if len(vars_) == 1 else tuple(vars_)
            completed = True
        finally:
            b.loop_kinds.pop()
            b.parallel_depth -= parallel
            b.vectorized_depth -= vectorized
            body = b.pop()
            if completed:
                b.emit(self._loop(vars_, body))

    def _loop(self, vars_, body):
        """The IR loop nest over `vars_` around the recorded `body`."""
        spec = self.annotations.get(PIPELINE)
        if spec is not None:   # T.Pipelined: its order/stage/sync/group must fit the body
            self.annotations = {**self.annotations, PIPELINE: spec.for_body(body, self.span)}
        for i in reversed(range(len(vars_))):
            ann = self.annotations if i == 0 else {}
            body = S.For(vars_[i], self.mins[i], self.extents[i], self.kind, body, ann,
                         self.step if len(vars_) == 1 else None)
        return body

    def __iter__(self):
        return self.iterate()


def _range(args, what):
    if len(args) == 1:
        return 0, args[0], None
    if len(args) == 2:
        start, stop = args
        return start, simplify(convert(stop) - convert(start)), None
    if len(args) == 3:
        start, stop, step = args
        from tilelang.ir.expr import const_int_value
        s = const_int_value(step)
        if s == 1:
            return start, simplify(convert(stop) - convert(start)), None
        # extent counts iterations; the loop variable runs start, start+step, ...
        n = (convert(stop) - convert(start) + convert(step) - 1) // convert(step) if (s is None or s > 0) \
            else (convert(start) - convert(stop) - convert(step) - 1) // (-convert(step))
        return start, simplify(n), step
    raise TileLangError(f"{what} takes 1 to 3 arguments (start, stop, step)")


def serial(*args, annotations=None):
    if len(args) == 1 and isinstance(args[0], range):
        r = args[0]
        args = (r.start, r.stop, r.step)
    start, ext, step = _range(args, "T.serial")
    return LoopFrame(S.SERIAL, [start], [ext], step, annotations)


def unroll(*args, step=None, explicit=False, unroll_factor=None, annotations=None):
    """An unrolled loop; `unroll_factor=n` asks for `#pragma unroll n` (partial unrolling),
    `explicit=True` for full unrolling (the published spellings, kept as annotations)."""
    if step is not None:
        args = tuple(args) + (step,) if len(args) == 2 else args
        if len(args) != 3:
            raise TileLangError("T.unroll(start, stop, step=...): a step needs both start and stop")
    start, ext, step = _range(args, "T.unroll")
    annotations = dict(annotations or {})
    if explicit:
        annotations["pragma_unroll_explicit"] = True
    if unroll_factor is not None:
        if explicit:
            raise ValueError("T.unroll: explicit=True and unroll_factor are mutually exclusive; give one")
        from tilelang.ir.expr import const_int_value
        if const_int_value(unroll_factor) is None or const_int_value(unroll_factor) < 1:
            raise ValueError(f"T.unroll: unroll_factor must be a positive integer, got {unroll_factor!r}")
        annotations["pragma_unroll_factor"] = const_int_value(unroll_factor)
    return LoopFrame(S.UNROLL, [start], [ext], step, annotations)


def vectorized(*args, annotations=None):
    start, ext, step = _range(args, "T.vectorized")
    return LoopFrame(S.VECTORIZED, [start], [ext], step, annotations)


def _given(*args):
    return [a for a in args if a is not None]


# The capitalised names are the published tile-level spellings of the same loops.
def Serial(start, stop=None, step=None, *, annotations=None):
    return serial(*_given(start, stop, step), annotations=annotations)


def Unroll(start, stop=None, step=None, *, explicit=False, unroll_factor=None, annotations=None):
    if step is not None and stop is None:
        raise TileLangError("T.Unroll(start, stop, step): a step needs both start and stop")
    return unroll(*_given(start, stop, step), explicit=explicit, unroll_factor=unroll_factor,
                  annotations=annotations)


def Vectorized(start, stop=None, *, annotations=None):
    return vectorized(*_given(start, stop), annotations=annotations)


def Parallel(*extents, coalesced_width=None, loop_layout=None, prefer_async=None, annotations=None):
    structure = None
    if extents and isinstance(extents[-1], str):
        structure = extents[-1].upper()
        extents = extents[:-1]
        if len(structure) != len(extents) or set(structure) - {"S", "R"}:
            raise TileLangError(f"T.Parallel structure {structure!r} must have one 'S' or 'R' per extent "
                                f"({len(extents)})")
    if not extents:
        raise TileLangError("T.Parallel needs at least one extent")
    mins, exts = [], []
    for e in extents:
        if isinstance(e, (tuple, list)) and len(e) == 2:
            mins.append(e[0])
            exts.append(simplify(convert(e[1]) - convert(e[0])))
        else:
            mins.append(0)
            exts.append(e)
    ann = dict(annotations or {})
    if structure:
        ann["structure"] = structure
    if coalesced_width:
        ann["coalesced_width"] = coalesced_width
    return LoopFrame(S.PARALLEL, mins, exts, None, ann)


def Pipelined(start, stop=None, num_stages=0, order=None, stage=None, sync=None, group=None,
              annotations=None):
    """A loop whose global -> shared copies for later iterations overlap the work of
    earlier ones; its arguments travel as one PipelineSpec (ir/pipeline_spec.py), checked
    against the body when the loop ends."""
    if stop is None:
        lo, ext = 0, start
    else:
        lo, ext = start, simplify(convert(stop) - convert(start))
    span = current_span()
    ann = {PIPELINE: make_pipeline_spec(num_stages, order, stage, sync, group, span)}
    ann.update(annotations or {})
    return LoopFrame(S.PIPELINED, [lo], [ext], None, ann, span=span)


def grid(*extents):
    return LoopFrame(S.SERIAL, [0] * len(extents), list(extents))


class PersistentFrame(LoopFrame):
    """`for v0, ..., vn in T.Persistent(domain, wave_size, index, group_size=8)`: the tiles of
    `domain` visited wave by wave by the `wave_size` blocks of a persistent kernel (`index`:
    the block's number in a wave), as the published package walks them: the last dimension
    is cut into groups of `group_size` (at most its extent), the tile number
    w * wave_size + index runs over (group, d0, ..., d(n-2), position in the group), so that
    the blocks of a wave share the tiles of other dimensions (L2 reuse); a tile number past
    the padded domain, or a last coordinate past its extent, does nothing. Recorded as a
    serial loop over the waves whose body reads the coordinates as expressions of the wave
    (the same IR as writing that arithmetic by hand)."""

    def __init__(self, domain, wave_size, index, group_size):
        self.kind, self.span, self.step, self.annotations = S.SERIAL, None, None, {}
        if not isinstance(domain, (list, tuple)) or not domain:
            raise TileLangError("T.Persistent(domain, wave_size, index): domain must be a non-empty list of "
                                "extents", hint="e.g. T.Persistent([T.ceildiv(M, bM), T.ceildiv(N, bN)], sm_num, bid)")
        self.domain = [simplify(_integer(d, "a T.Persistent domain extent")) for d in domain]
        self.wave_size = _integer(wave_size, "T.Persistent's wave_size")
        self.index = _integer(index, "T.Persistent's index")
        g = _integer(8 if group_size is None else group_size, "T.Persistent's group_size")
        self.group = simplify(_maximum(convert(1), _minimum(g, self.domain[-1])))

    def _loop(self, coords, body):
        from tilelang.language.math import ceildiv
        from tilelang.ir.visitor import substitute
        last, g = self.domain[-1], self.group
        grouped = [simplify(ceildiv(last, g))] + self.domain[:-1] + [g]
        padded = grouped[0]
        for e in grouped[1:]:
            padded = simplify(padded * e)
        w = Var("w", self.wave_size.dtype)
        tile = w * self.wave_size + self.index
        idx, rem = [None] * len(grouped), tile
        for i in range(len(grouped) - 1, 0, -1):
            idx[i] = rem % grouped[i]
            rem = rem // grouped[i]
        idx[0] = rem
        values = {v: simplify(idx[i + 1]) for i, v in enumerate(coords[:-1])}
        values[coords[-1]] = simplify(idx[0] * g + idx[-1])
        guarded = S.IfThenElse(values[coords[-1]] < last, substitute(body, values))
        inner = S.IfThenElse(tile < padded, guarded)
        return S.For(w, convert(0), simplify(ceildiv(padded, self.wave_size)), S.SERIAL, inner)

    def _vars(self):   # the tile coordinates the body reads (LoopFrame.iterate records it)
        names = B.source_names("for") or []
        return [Var(names[i] if i < len(names) else f"v{i}", d.dtype) for i, d in enumerate(self.domain)]


def Persistent(domain, wave_size, index, group_size=8):
    """The tiles of `domain` for a persistent kernel's block `index` of `wave_size` (PersistentFrame)."""
    return PersistentFrame(domain, wave_size, index, group_size)
