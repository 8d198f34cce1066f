"""Block-level statements run once per block (the kernel body's semantics, and the CPU
backend's). On the GPU every thread runs a block-level statement that writes its own
registers, so one whose value has an effect -- an atomic's previous value,
`x = T.atomic_add(C[0], 1, return_prev=True)` into a T.alloc_var or a local -- would run
the effect once per thread. This pass gives the effect to one thread and the value to all:

    x[i] = <value with an atomic>   ->   x_once[0] = <value>      (shared: thread 0)
                                         x[i] = x_once[0]         (every thread)

(the CUDA codegen runs a block-level shared store on thread 0, and the barrier planner
orders the read after it). Statements under T.Parallel or a condition on the thread index
are per-thread already and are left alone."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer
from tilelang.ir.visitor import walk, collect_vars, substitute
from tilelang.arith.simplify import simplify
from tilelang.transform.pass_manager import function_pass

_REGISTER_SCOPES = ("local", "local.var", "local.fragment")


def has_effect(e) -> bool:
    """Whether evaluating `e` changes memory (an atomic read-modify-write)."""
    found = []
    walk(e, lambda n: found.append(n) if isinstance(n, E.Call) and n.name.startswith("atomic_") else None)
    return bool(found)


@function_pass("broadcast_block_effects")
def broadcast_block_effects(func):
    return func.with_body(_Rewriter().stmt(func.body, None))


class _Rewriter:
    def __init__(self):
        self.count = 0

    def stmt(self, st, td):
        """`td`: ids of the variables that depend on the thread index (None: outside a kernel)."""
        if isinstance(st, S.KernelLaunch):
            body = self.stmt(st.body, {id(v) for v in st.thread_vars})
            if body is st.body:
                return st
            out = S.KernelLaunch(st.grid, st.threads, st.block_vars, st.thread_vars, body, st.annotations)
            out.span = st.span
            return out
        if td is None:
            if isinstance(st, S.SeqStmt):
                return self._seq(st, None)
            return st
        if isinstance(st, S.SeqStmt):
            return self._seq(st, td)
        if isinstance(st, S.LetStmt):
            inner = set(td) | ({id(st.var)} if self._dep(st.value, td) else set())
            body = self.stmt(st.body, inner)
            return st if body is st.body else self._copy_span(st, S.LetStmt(st.var, st.value, body))
        if isinstance(st, S.For) and st.kind != S.PARALLEL:
            if self._dep(st.min, td) or self._dep(st.extent, td):
                return st
            if st.kind == S.VECTORIZED and self._broadcastable(st.body, td) and \
                    E.const_int_value(st.min) == 0 and E.const_int_value(st.extent) is not None:
                return self._broadcast_lanes(st)
            body = self.stmt(st.body, td)
            return st if body is st.body else self._copy_span(
                st, S.For(st.var, st.min, st.extent, st.kind, body, st.annotations, st.step))
        if isinstance(st, S.IfThenElse):
            if self._dep(st.cond, td):
                return st   # the threads that take it are the program's choice
            then = self.stmt(st.then_body, td)
            other = self.stmt(st.else_body, td) if st.else_body is not None else None
            if then is st.then_body and other is st.else_body:
                return st
            return self._copy_span(st, S.IfThenElse(st.cond, then, other))
        if self._broadcastable(st, td):
            return self._broadcast(st)
        return st

    def _broadcastable(self, st, td):
        return isinstance(st, S.BufferStore) and st.buffer.scope in _REGISTER_SCOPES and \
            has_effect(st.value) and not self._dep(st.value, td) and not any(self._dep(i, td) for i in st.indices)

    def _seq(self, st, td):
        stmts = [self.stmt(s, td) for s in st.stmts]
        return st if all(a is b for a, b in zip(stmts, st.stmts)) else S.seq(stmts)

    @staticmethod
    def _dep(e, td):
        return any(id(v) in td for v in collect_vars(e))

    @staticmethod
    def _copy_span(old, new):
        new.span = getattr(old, "span", None)
        return new

    def _broadcast(self, st):
        self.count += 1
        once = Buffer(f"{st.buffer.name}_once", (1,), st.value.dtype, "shared")
        zero = [E.IntImm(0)]
        effect = S.BufferStore(once, st.value, zero)
        share = S.BufferStore(st.buffer, E.BufferLoad(once, zero), st.indices)
        for n in (effect, share):
            n.span = getattr(st, "span", None)
        return S.seq([S.DeclBuffer(once), effect, share])

    def _broadcast_lanes(self, loop):
        """`for t in T.vectorized(n): x[t] = <value>` (T.atomic_addx{n}(..., return_prev=True))
        as one unit, so that the effects stay one vector operation:

            for t in T.vectorized(n): x_once[t] = <value>     (shared: thread 0)
            x[0] = x_once[0]; ...; x[n - 1] = x_once[n - 1]   (every thread, after one barrier)"""
        st, n = loop.body, E.const_int_value(loop.extent)
        self.count += 1
        once = Buffer(f"{st.buffer.name}_once", (n,), st.value.dtype, "shared")
        effect = S.For(loop.var, loop.min, loop.extent, S.VECTORIZED,
                       S.BufferStore(once, st.value, [loop.var]), loop.annotations)
        share = [S.BufferStore(st.buffer, E.BufferLoad(once, [E.IntImm(t)]),
                               [simplify(substitute(i, {loop.var: E.IntImm(t)})) for i in st.indices])
                 for t in range(n)]
        for node in (effect, effect.body, *share):
            node.span = getattr(loop, "span", None)
        return S.seq([S.DeclBuffer(once), effect, *share])
