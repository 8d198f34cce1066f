"""Which threads touch which elements of a buffer in a T.Parallel nest, as the CUDA code
generator shares the nest out (after plan_thread_splits, when every nest has its form).

A nest runs each of its iterations on threads the plan fixes:

- a cooperative nest (plan/copy_forms.py form `vector` or `scalar`, the split of
  plan/thread_splits.py recorded on it): its iterations, taken `width` at a time along the
  innermost loop, are numbered row-major from the loops' minima, and vector q runs on thread
  q % nthreads (the exact, guarded and strided splits of emit/kernel.py `cooperative` alike);
- a nest over register fragments (the fragments indexed by the nest's own loop variables,
  all in one layout): iteration p runs on every thread that holds element p of the layout
  (its replicas included: layout/*.py `fragment()`, the model the device headers are checked
  against).

`element_threads` evaluates every access's indices over the whole iteration space at once
(numpy, layout/evaluate.py) and returns, per buffer, the flat element each access reaches
with the thread that makes it. It answers None for any nest it cannot model (another form,
a symbolic extent, an index naming something other than the nest's loop variables and
constants, a fragment indexed otherwise): callers then keep whatever ordering they had."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk, collect_vars
from tilelang.ir.buffer import storage_root
from tilelang.layout.evaluate import evaluate, const_shape
from tilelang.backend.cuda.analysis.facts import parallel_nest
from tilelang.backend.cuda.layout import REGISTER_FRAGMENT_KINDS
from tilelang.backend.cuda.layout.tile import Scalar

COOPERATIVE_FORMS = ("vector", "scalar")   # synchronous: a thread's own accesses are done when it moves on
MAX_POINTS = 1 << 16                       # iterations times replicas evaluated for one nest


class Touches(NamedTuple):
    """The accesses of one nest to one buffer: `elements[k]` (the row-major flat index) is
    reached by thread `threads[k]`, a write where `writes[k]`. `elements` and `threads` are
    None where an index is not a function of the nest's loop variables alone (a global
    tensor's `A[by * 32 + i, ...]`): which elements is then unknown, `writes` still says
    whether any access writes."""
    buffer: object
    elements: np.ndarray | None
    threads: np.ndarray | None
    writes: np.ndarray


def _accesses(body):
    """[(buffer, indices, is_write)] of every load and store under `body` (guards and select
    conditions included: a superset of what runs is a safe answer), or None where the body
    reaches memory otherwise: a statement call, an address taken, an atomic (its target is
    an argument that reads as a load)."""
    out = []
    opaque = []

    def f(n):
        if isinstance(n, S.Evaluate) or (isinstance(n, E.Call) and (
                E.addressed_load(n) is not None or n.name.startswith("atomic"))):
            opaque.append(n)
        elif isinstance(n, E.BufferLoad):
            out.append((n.buffer, n.indices, False))
        elif isinstance(n, S.BufferStore):
            out.append((n.buffer, n.indices, True))
    walk(body, f)
    return None if opaque else out


def _grid(exts, mins):
    """The nest's iteration space: one int64 array per loop, each of shape `exts`."""
    idx = np.indices(tuple(exts)).astype(np.int64)
    return [idx[k] + mins[k] for k in range(len(exts))]


def _iteration_threads(plan, nest, vars_, exts, accesses):
    """(threads, replicas): `threads` an int64 array of shape (replicas, *exts) giving the
    thread that runs each iteration (per replica), or None where the nest is not modelled."""
    from tilelang.backend.cuda.plan.copy_form import copy_form
    from tilelang.backend.cuda.plan.thread_splits import thread_split_of
    regs = {}
    for b, idx, _ in accesses:
        p = plan.placements.get(id(b))
        if p is not None and p.kind in REGISTER_FRAGMENT_KINDS:
            regs[id(b)] = (b, p, idx)
        elif p is not None and p.kind in ("local", "var"):
            return None   # a thread's own array in a shared-out nest: not a shape this models
    if regs:
        layout = next(iter(regs.values()))[1].acc
        if layout is None or any(p.acc != layout for _, p, _ in regs.values()):
            return None
        for b, p, idx in regs.values():   # each fragment indexed by the loop variables, in order
            if len(idx) != len(vars_) or any(not (isinstance(i, E.Var) and i is v) for i, v in zip(idx, vars_)):
                return None
        try:
            frag = layout.fragment(plan.nthreads) if isinstance(layout, Scalar) else layout.fragment()
            shape = const_shape(frag.input_shape, "fragment")
        except Exception:  # noqa: BLE001 - a layout without a closed-form Fragment: not modelled
            return None
        if tuple(shape) != tuple(exts):
            return None
        return frag.thread_table()
    form = copy_form(nest)
    split = thread_split_of(nest)
    if form is None or form.kind not in COOPERATIVE_FORMS or split is None:
        return None
    width = form.width or 1
    if exts[-1] % width:
        return None
    vec_exts = list(exts[:-1]) + [exts[-1] // width]
    idx = np.indices(tuple(exts)).astype(np.int64)
    q = np.zeros(tuple(exts), np.int64)
    for k, n in enumerate(vec_exts):   # row-major over the vectors
        q = q * n + (idx[k] // width if k == len(exts) - 1 else idx[k])
    return (q % plan.nthreads)[None]


def element_threads(plan, nest):
    """{id(buffer): Touches} for the block-visible buffers (shared and global) that
    T.Parallel `nest` reads or writes, or None where the nest is not modelled (module
    docstring). Register fragments and a thread's own arrays are left out."""
    if not (isinstance(nest, S.For) and nest.kind == S.PARALLEL):
        return None
    vars_, mins, exts, body = parallel_nest(nest)
    mins = [E.const_int_value(m) for m in mins]
    exts = [E.const_int_value(e) for e in exts]
    if None in mins or None in exts or not vars_ or int(np.prod(exts)) > MAX_POINTS:
        return None
    accesses = _accesses(body)
    if accesses is None:
        return None
    threads = _iteration_threads(plan, nest, vars_, exts, accesses)
    if threads is None or threads.size > MAX_POINTS:
        return None
    grid = _grid(exts, mins)
    env = {id(v): g for v, g in zip(vars_, grid)}
    loop_ids = set(env)
    out = {}
    for b, indices, is_write in accesses:
        p = plan.placements.get(id(b))
        if p is not None and p.kind in REGISTER_FRAGMENT_KINDS + ("local", "var"):
            continue
        in_memory = b.scope == "global" if p is None else p.kind == "smem"
        if storage_root(b) is not b or not in_memory:
            return None   # a view, or memory this does not model
        flat = _flat_elements(b, indices, env, loop_ids, tuple(exts))
        if flat is None:
            t = Touches(b, None, None, np.array([is_write]))
        else:
            el = np.broadcast_to(flat, threads.shape).ravel()
            t = Touches(b, el, threads.ravel(), np.full(el.shape, is_write))
        prev = out.get(id(b))
        out[id(b)] = t if prev is None else _joined(prev, t)
    return out


def _flat_elements(b, indices, env, loop_ids, exts):
    """The row-major flat element of buffer `b` each iteration reaches, or None where an
    index names anything but the nest's loop variables (or cannot be evaluated)."""
    shape = [E.const_int_value(s) for s in b.shape]
    if None in shape or len(indices) != len(shape):
        return None
    if any(id(v) not in loop_ids for i in indices for v in collect_vars(i)):
        return None
    try:
        flat = np.zeros(exts, np.int64)
        for i, n in zip(indices, shape):
            flat = flat * n + np.broadcast_to(np.asarray(evaluate(i, env), np.int64), exts)
    except (NotImplementedError, TypeError, ValueError):
        return None
    return flat


def _joined(a, b):
    if a.elements is None or b.elements is None:
        return Touches(a.buffer, None, None, np.concatenate([a.writes, b.writes]))
    return Touches(a.buffer, np.concatenate([a.elements, b.elements]), np.concatenate([a.threads, b.threads]),
                   np.concatenate([a.writes, b.writes]))


def shared_by_threads(touches) -> bool:
    """Whether some element that one of `touches` (Touches of one buffer) writes is also
    reached, read or written, by another thread: the accesses need a barrier between them
    where they are not in one thread's program order. Unknown elements (Touches.elements
    None) count as shared when anything writes."""
    if not any(t.writes.any() for t in touches):
        return False
    if any(t.elements is None for t in touches):
        return True
    el = np.concatenate([t.elements for t in touches])
    th = np.concatenate([t.threads for t in touches])
    wr = np.concatenate([t.writes for t in touches])
    if not wr.any():
        return False
    order = np.argsort(el, kind="stable")
    el, th, wr = el[order], th[order], wr[order]
    starts = np.flatnonzero(np.r_[True, el[1:] != el[:-1]])
    lo = np.minimum.reduceat(th, starts)
    hi = np.maximum.reduceat(th, starts)
    written = np.logical_or.reduceat(wr, starts)
    return bool(np.any(written & (lo != hi)))


__all__ = ["Touches", "element_threads", "shared_by_threads", "COOPERATIVE_FORMS", "MAX_POINTS"]
