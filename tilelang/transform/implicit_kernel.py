"""The implicit-kernel form: a function with no `T.Kernel` whose top-level
`T.Parallel(..., "SSR")` loop nest maps the S loops to the grid and runs the R
loops inside each block.

- statements before the loop run in every block (allocations, fills);
- fragments that the R loops accumulate into (gemm outputs) start at zero per block;
- after the loop, `T.copy(tile, Tensor)` of a block tile to a whole tensor writes
  the block's own tile (`Tensor` dims must be exact multiples of the tile)."""
from __future__ import annotations

from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir import expr as E
from tilelang.ir.buffer import BufferRegion
from tilelang.ir.visitor import substitute, walk
from tilelang.ir.errors import ShapeMismatchError, TileLangError
from tilelang.transform.pass_manager import function_pass

DEFAULT_THREADS = 128


def _has_kernel(stmt):
    found = []
    walk(stmt, lambda n: found.append(n) if isinstance(n, S.KernelLaunch) else None)
    return bool(found)


def _stmts(body):
    return list(body.stmts) if isinstance(body, S.SeqStmt) else [body]


def _split_structure(loop):
    """Peel the nest of a structured T.Parallel into ([(var, ext, 'S'|'R')], body)."""
    structure = loop.annotations["structure"]
    out, cur = [], loop
    for ch in structure:
        out.append((cur.var, cur.min, cur.extent, ch))
        cur = cur.body
    return out, cur


@function_pass("implicit_kernel")
def implicit_kernel(func):
    stmts = _stmts(func.body)
    idx = [i for i, s in enumerate(stmts) if isinstance(s, S.For) and "structure" in s.annotations]
    if not idx or _has_kernel(func.body):
        return func
    if len(idx) > 1:
        raise TileLangError("only one structured T.Parallel(..., 'SSR') loop is allowed per function",
                            span=stmts[idx[1]].span)
    k = idx[0]
    loop = stmts[k]
    nest, inner = _split_structure(loop)
    spatial = [(v, mn, ext) for v, mn, ext, ch in nest if ch == "S"]
    if len(spatial) > 3:
        raise TileLangError("at most 3 'S' loops map to the grid", span=loop.span)
    block_vars = [E.Var(n) for n in ("bx", "by", "bz")[:len(spatial)]]
    mapping = {v: E.binop("+", mn, b) if E.const_int_value(mn) != 0 else b
               for (v, mn, _), b in zip(spatial, block_vars)}
    body = inner
    for v, mn, ext, ch in reversed(nest):
        if ch == "R":
            body = S.For(v, mn, ext, S.SERIAL, body)
    body = substitute(body, mapping)
    # fragments the R loops accumulate into (gemm outputs, reductions with clear=False,
    # `acc[..] = f(acc[..])` stores) start at zero in each block, unless a statement
    # before the loop initialises them
    accs = []
    walk(body, lambda n: accs.extend(_accumulated(n)))
    seen = set()
    for st in stmts[:k]:
        walk(st, lambda n: seen.update(id(b) for b in _written(n)))
    zero = []
    for r in accs:
        if id(r.buffer) not in seen and r.buffer.scope in ("local.fragment", "local"):
            seen.add(id(r.buffer))
            zero.append(TO.Fill(BufferRegion(r.buffer, [(E.IntImm(0), E.convert(d)) for d in r.buffer.shape]),
                                E.literal(0, r.buffer.dtype)))
    after = [substitute(_own_tile(s, spatial, block_vars), mapping) for s in stmts[k + 1:]]
    kbody = S.seq(stmts[:k] + zero + [body] + after)
    launch = S.KernelLaunch([ext for _, _, ext in spatial], [DEFAULT_THREADS], block_vars,
                            [E.Var("tx")], kbody)
    launch.span = loop.span
    return func.with_body(launch)


def _accumulated(n):
    """Regions that statement `n` reads back and updates (accumulates into)."""
    if isinstance(n, TO.Gemm):
        return [n.C]
    if isinstance(n, TO.Reduce) and not n.clear:
        return [n.dst]
    if isinstance(n, S.BufferStore):
        loads = []
        walk(n.value, lambda e: loads.append(e) if isinstance(e, E.BufferLoad) and e.buffer is n.buffer else None)
        if loads:
            return [BufferRegion(n.buffer, [(E.IntImm(0), E.convert(d)) for d in n.buffer.shape])]
    return []


def _written(n):
    """Buffers that statement `n` writes."""
    if isinstance(n, (TO.Copy, TO.Fill, TO.Reduce, TO.CumSum, TO.Atomic)):
        return [n.dst.buffer]
    if isinstance(n, TO.Gemm):
        return [n.C.buffer]
    if isinstance(n, S.BufferStore):
        return [n.buffer]
    return []


def _own_tile(stmt, spatial, block_vars):
    """A copy of a tile to a whole global tensor writes this block's tile."""
    if not isinstance(stmt, TO.Copy):
        return stmt
    src, dst = stmt.src, stmt.dst
    if dst.buffer.scope != "global" or src.buffer.scope == "global":
        return stmt
    if not all(E.const_int_value(s) == 0 for s in dst.starts):
        return stmt
    sext = [e for e in src.extents if E.const_int_value(e) != 1]
    dext = list(dst.extents)
    same = len(sext) == len(dext) and all(E.const_int_value(a) == E.const_int_value(b) for a, b in zip(sext, dext))
    if same:
        return stmt
    if len(sext) != len(dext) or len(dext) != len(spatial):
        raise ShapeMismatchError(
            f"cannot infer which part of `{dst.buffer.name}` this block writes: the tile is "
            f"{[str(e) for e in sext]}, the tensor {[str(e) for e in dext]} and there are {len(spatial)} "
            f"spatial loops", span=stmt.span,
            hint=f"write the slice explicitly, e.g. T.copy({src.buffer.name}, "
                 f"{dst.buffer.name}[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn])")
    ranges = []
    for d, (t, full) in enumerate(zip(sext, dext)):
        ti, fi = E.const_int_value(t), E.const_int_value(full)
        if ti is None or fi is None or fi % ti != 0:
            raise ShapeMismatchError(
                f"`{dst.buffer.name}` dimension {d} ({full}) is not a multiple of the tile ({t})",
                span=stmt.span,
                hint=f"write the block's slice explicitly: T.copy({src.buffer.name}, "
                     f"{dst.buffer.name}[i * {t}:(i + 1) * {t}, ...]) so that ragged edges are predicated")
        ranges.append((E.binop("*", block_vars[d], ti), E.IntImm(ti)))
    out = TO.Copy(src, BufferRegion(dst.buffer, ranges), stmt.annotations)
    out.span = stmt.span
    return out
