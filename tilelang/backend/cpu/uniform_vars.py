"""Which `T.alloc_var` scalars hold the same value in every thread of the block.

In a kernel run in thread phases (thread_phases.py) a per-thread variable gets one copy
per thread, and a loop or branch whose condition reads it counts as thread-dependent: a
barrier inside it is refused. A counter that every thread sets alike (`cnt = 0`, then
`cnt = cnt + 1` in a loop around barriers) is the block's, not the thread's: it gets one
copy, its stores run once for the block, and conditions that read it are uniform.

A variable is uniform when every store to it is reached under thread-independent control
and stores a thread-independent value (no thread index, no per-thread storage other than
uniform variables, no calls with effects such as atomics), and it is used only through
loads and stores. Computed as a fixpoint: start from every candidate, drop violators."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.visitor import walk

_EFFECT_PREFIXES = ("atomic_", "tl.", "rand", "curand")


def uniform_vars(body, thread_var_ids, private_ids, buffers_by_id) -> set:
    """ids of the `local.var` buffers among `private_ids` that are uniform."""
    cand = {i for i in private_ids if buffers_by_id[i].scope == "local.var"}
    cand -= _used_other_than_load_store(body, cand)
    while cand:
        bad = _Check(thread_var_ids, private_ids, cand).run(body)
        if not bad:
            break
        cand -= bad
    return cand


def _used_other_than_load_store(body, cand):
    """Candidates named by anything but a scalar load or store (a tile op, an address)."""
    out = set()

    def f(n):
        if isinstance(n, E.Call) and (n.dtype.name == "handle" or n.name.startswith(_EFFECT_PREFIXES)):
            for a in n.args:   # an address taken, an atomic on it: written behind our back
                if isinstance(a, E.BufferLoad) and id(a.buffer) in cand:
                    out.add(id(a.buffer))
        if isinstance(n, (E.BufferLoad, S.BufferStore, S.DeclBuffer)):
            return
        for v in vars(n).values() if hasattr(n, "__dict__") else ():
            for x in (v if isinstance(v, (list, tuple)) else [v]):
                b = x.buffer if isinstance(x, (BufferRegion, E.BufferLoad)) else x
                if isinstance(b, Buffer) and id(b) in cand:
                    out.add(id(b))
    walk(body, f)
    return out


class _Check:
    def __init__(self, tvars, private, cand):
        self.dep_ids = set(tvars)          # thread vars and lets bound to thread-dependent values
        self.nonuniform = set(private) - set(cand)
        self.cand = cand
        self.bad = set()

    def run(self, body):
        self._stmt(body, False)
        return self.bad

    def _dep(self, e):
        hit = []

        def f(n):
            if hit:
                return
            if isinstance(n, E.Var) and id(n) in self.dep_ids:
                hit.append(n)
            elif isinstance(n, E.BufferLoad) and id(n.buffer) in self.nonuniform:
                hit.append(n)
            elif isinstance(n, E.Call) and (n.name.startswith(_EFFECT_PREFIXES) or n.dtype.name == "handle"):
                hit.append(n)
        walk(e, f)
        return bool(hit)

    def _stmt(self, s, under_dep):
        if s is None:
            return
        if isinstance(s, S.SeqStmt):
            for x in s.stmts:
                self._stmt(x, under_dep)
        elif isinstance(s, S.BufferStore):
            if id(s.buffer) in self.cand and (under_dep or self._dep(s.value) or
                                             any(self._dep(i) for i in s.indices)):
                self.bad.add(id(s.buffer))
        elif isinstance(s, S.For):
            d = under_dep or any(self._dep(x) for x in (s.min, s.extent, s.step) if x is not None)
            self._stmt(s.body, d)
        elif isinstance(s, S.While):
            self._stmt(s.body, under_dep or self._dep(s.cond))
        elif isinstance(s, S.IfThenElse):
            d = under_dep or self._dep(s.cond)
            self._stmt(s.then_body, d)
            self._stmt(s.else_body, d)
        elif isinstance(s, S.LetStmt):
            if self._dep(s.value):
                self.dep_ids.add(id(s.var))
            self._stmt(s.body, under_dep)
        else:   # other statements: any store to a candidate inside them counts under their control
            for c in (getattr(s, "body", None), getattr(s, "then_body", None), getattr(s, "else_body", None)):
                if isinstance(c, S.Stmt):
                    self._stmt(c, under_dep)
