"""Predicate element accesses to global buffers that cannot be proven in bounds:
loads outside read 0, stores outside are skipped (as `T.copy` does); on the CPU,
stores to a block's own arrays (shared, fragment, local) too. Bounds come
from interval analysis over loop and block ranges, and from the conditions of
enclosing `if`s (a user's own guard makes ours unnecessary)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.safe_values import SafeValueScopes
from tilelang.ir.tile_ops import is_atomic_access
from tilelang.ir.visitor import Mutator, _keep, collect_vars
from tilelang.ir.printer import Printer
from tilelang.arith.bounds import bound
from tilelang.arith.simplify import simplify
from tilelang.transform.pass_manager import function_pass



def over_indexed_fragments(body):
    """id(1-D fragment) -> extent of a loop that indexes it directly by its variable,
    where that extent exceeds the fragment's length. On the GPU a fragment's registers
    follow the loop that fills it, so `sinks = T.alloc_fragment([heads])` written and read
    as `sinks[i]` for i < block_M (the published attention-sink examples) holds block_M
    values; the CPU backend gives such a fragment that many elements (and stores to them
    need no guard)."""
    from tilelang.ir.visitor import walk
    out = {}

    def loops(st):
        if not isinstance(st, S.For):
            return
        ext, lo = E.const_int_value(st.extent), E.const_int_value(st.min)
        if ext is None or lo != 0:
            return

        def hit(n):
            if isinstance(n, (E.BufferLoad, S.BufferStore)) and n.buffer.scope == "local.fragment" and \
                    n.buffer.ndim == 1 and n.indices[0] is st.var:
                size = E.const_int_value(n.buffer.numel())
                if size is not None and 1 < size < ext:
                    out[id(n.buffer)] = max(out.get(id(n.buffer), 0), ext)
        walk(st.body, hit)
    walk(body, loops)
    return out


class _Legalize(Mutator):
    def __init__(self, guard_local_stores=False, grown=None):
        self.guard_local_stores = guard_local_stores
        self.grown = grown or {}   # fragments the CPU backend allocates longer (over_indexed_fragments)
        self.ranges = {}
        self.facts = [set()]
        self.printer = Printer()
        self.safe_values = SafeValueScopes()   # T.annotate_safe_value of the enclosing scopes

    def key(self, e):
        return self.printer.expr(e)

    def known(self, c):
        return self.key(c) in self.facts[-1]

    def add_facts(self, facts, cond):
        for c in E.conjuncts(cond):
            facts.add(self.key(c))
            facts.add(self.key(simplify(c)))

    def with_facts(self, cond, fn):
        new = set(self.facts[-1])
        self.add_facts(new, cond)
        self.facts.append(new)
        try:
            return fn()
        finally:
            self.facts.pop()

    def visit_SeqStmt(self, n):
        """`T.assume(c)` makes `c` known to the statements after it in its block."""
        if not any(isinstance(x, S.Assume) for x in n.stmts):
            return super().generic_visit(n)
        self.facts.append(set(self.facts[-1]))
        try:
            out = []
            for x in n.stmts:
                if isinstance(x, S.Assume):
                    self.add_facts(self.facts[-1], x.cond)
                out.append(self.visit(x))
        finally:
            self.facts.pop()
        return S.seq([x for x in out if x is not None])

    # ranges ---------------------------------------------------------------------
    def visit_For(self, n):
        lo = bound(n.min, self.ranges)
        ext = bound(n.extent, self.ranges)
        step = E.const_int_value(n.step) if n.step is not None else 1
        if lo is not None and step is not None and step > 0:
            # a symbolic extent (a dynamic dimension) still leaves the var >= its start
            hi = lo[1] + (ext[1] - 1) * step if ext is not None else 2 ** 31 - 1
            self.ranges[id(n.var)] = (lo[0], hi)
        step = E.const_int_value(n.step) if n.step is not None else 1
        if step == 1:   # symbolic bounds too: min <= var < min + extent inside the loop
            inside = E.binop("&&", E.binop(">=", n.var, n.min),
                             E.binop("<", n.var, simplify(E.binop("+", n.min, n.extent))))
            return self.with_facts(inside, lambda: self._visit_loop(n))
        return self._visit_loop(n)

    def _visit_loop(self, n):
        try:
            return super().generic_visit(n)
        finally:
            self.ranges.pop(id(n.var), None)

    def visit_SBlock(self, n):
        with self.safe_values.enter(n):
            return super().generic_visit(n)

    def visit_KernelLaunch(self, n):
        with self.safe_values.enter(n):
            return self._visit_kernel(n)

    def _visit_kernel(self, n):
        for v, g in zip(n.block_vars, n.grid):
            b = bound(g, self.ranges)
            self.ranges[id(v)] = (0, b[1] - 1) if b is not None else (0, 2 ** 31 - 1)
        self.thread_var_ids = {id(v) for v in n.thread_vars}
        for v, t in zip(n.thread_vars, n.threads):   # T.get_thread_binding(): 0 <= tx < threads
            b = bound(t, self.ranges)
            if b is not None:
                self.ranges[id(v)] = (0, b[1] - 1)
        # a symbolic grid extent (a dynamic dimension) bounds its block index all the same:
        # `T.Kernel(num_tokens) as i` proves the `i < num_tokens` of every tile access at i
        inside = None
        for v, g in zip(n.block_vars, n.grid):
            if E.const_int_value(g) is None:
                c = E.binop("<", v, g)
                inside = c if inside is None else E.binop("&&", inside, c)
        try:
            if inside is not None:
                return self.with_facts(inside, lambda: super(_Legalize, self).generic_visit(n))
            return super().generic_visit(n)
        finally:
            for v in list(n.block_vars) + list(n.thread_vars):
                self.ranges.pop(id(v), None)

    # conditions the ranges prove --------------------------------------------------
    def proven(self, c):
        """Whether the integer comparison `c` holds over the variables' ranges (the
        bounds checks `T.copy` puts on every tile, e.g. `by * 128 + i < 1024` for
        0 <= by < 8, 0 <= i < 128)."""
        if not (isinstance(c, E.BinOp) and c.op in ("<", "<=", ">", ">=")):
            return False
        if not all(isinstance(x, E.PrimExpr) and x.dtype.is_int for x in (c.a, c.b)):
            return False
        a, b = bound(c.a, self.ranges), bound(c.b, self.ranges)
        if a is None or b is None:
            return False
        return {"<": a[1] < b[0], "<=": a[1] <= b[0], ">": a[0] > b[1], ">=": a[0] >= b[1]}[c.op]

    def prune(self, cond):
        """`cond` without its proven conjuncts; None when all of them are proven. A
        condition on the thread index stays even when it always holds: it is what makes
        the statement under it run on every thread (`if tx < 64:` with 64 threads), where
        a block-level statement runs once (transform/broadcast_block_effects.py)."""
        terms = E.conjuncts(cond)
        threads = getattr(self, "thread_var_ids", set())
        keep = [c for c in terms if not (self.proven(c) or self.known(c))
                or any(id(v) in threads for v in collect_vars(c))]
        if len(keep) == len(terms):
            return cond
        out = None
        for c in keep:
            out = c if out is None else E.binop("&&", out, c)
        return out

    def visit_IfThenElse(self, n):
        cond = self.prune(self.visit(n.cond))
        if cond is None:
            return self.visit(n.then_body)
        then = self.with_facts(cond, lambda: self.visit(n.then_body))
        other = self.visit(n.else_body) if n.else_body is not None else None
        if cond is n.cond and then is n.then_body and other is n.else_body:
            return n
        out = S.IfThenElse(cond, then, other)
        out.span = n.span
        return out

    def visit_Select(self, n):
        cond = self.prune(self.visit(n.cond))
        if cond is None:
            return self.visit(n.t)
        t = self.with_facts(cond, lambda: self.visit(n.t))
        f = self.visit(n.f)
        if cond is n.cond and t is n.t and f is n.f:
            return n
        return E.Select(cond, t, f)

    # accesses -------------------------------------------------------------------
    def conditions(self, buf, indices):
        conds = []
        for i, dim in zip(indices, buf.shape):
            b = bound(i, self.ranges)
            n = bound(E.convert(dim), self.ranges) if not isinstance(dim, int) else (dim, dim)
            if b is None or n is None or b[1] >= n[0]:
                c = simplify(E.binop("<", i, dim))
                if not (isinstance(c, E.IntImm) and c.value) and not self.known(c):
                    conds.append(c)
            if b is None or b[0] < 0:
                c = simplify(E.binop(">=", i, 0))
                if not (isinstance(c, E.IntImm) and c.value) and not self.known(c):
                    conds.append(c)
        out = None
        for c in conds:
            out = c if out is None else E.binop("&&", out, c)
        return out

    def visit_BufferLoad(self, n):
        n2 = super().generic_visit(n)
        if n2.buffer.scope != "global":
            return n2
        c = self.conditions(n2.buffer, n2.indices)
        if c is None:
            return n2
        # outside the bounds a load reads the tensor's safe value in this scope (T.annotate_safe_value), else 0
        return E.Select(c, n2, self.safe_values.out_of_bounds_value(n2.buffer))

    def visit_BufferStore(self, n):
        n2 = super().generic_visit(n)
        if n2.buffer.scope != "global" and not (self.guard_local_stores and n2.buffer.scope != "local.var"):
            return n2
        if id(n2.buffer) in self.grown:
            b = bound(n2.indices[0], self.ranges)
            if b is not None and b[0] >= 0 and b[1] < self.grown[id(n2.buffer)]:
                return n2
        c = self.conditions(n2.buffer, n2.indices)
        if c is None:
            return n2
        out = S.IfThenElse(c, n2)
        out.span = n.span
        return out

    def visit_Call(self, n):
        if E.addressed_load(n) is not None:  # T.access_ptr: an address, not a load to predicate
            ld = n.args[0]
            idx = [self.visit(i) for i in ld.indices]
            if all(a is b for a, b in zip(idx, ld.indices)):
                return n
            return E.Call(n.name, [E.BufferLoad(ld.buffer, idx)] + n.args[1:], n.dtype)
        # atomics take the address of their first argument: guard the whole call
        if is_atomic_access(n):
            args = [n.args[0]] + [self.visit(a) for a in n.args[1:]]
            idx = [self.visit(i) for i in n.args[0].indices]
            return E.Call(n.name, [E.BufferLoad(n.args[0].buffer, idx)] + args[1:], n.dtype)
        return super().generic_visit(n)

    def visit_Evaluate(self, n):
        v = self.visit(n.value)
        out = _keep(S.Evaluate(v), n) if v is not n.value else n
        if isinstance(v, E.Call) and is_atomic_access(v) and v.args[0].buffer.scope == "global":
            c = self.conditions(v.args[0].buffer, v.args[0].indices)
            if c is not None:
                out = S.IfThenElse(c, out)
                out.span = n.span
        return out


@function_pass("legalize_safe_memory_access")
def legalize_safe_memory_access(func, ctx=None):
    if ctx is not None and ctx.get("tl.disable_safe_memory_legalize"):
        return func
    # On the CPU a block's shared/fragment/local arrays are ordinary memory: a store past
    # their end (a kernel bug the GPU may not notice) would corrupt the process, so such
    # stores are skipped there too.
    cpu = ctx is not None and getattr(getattr(ctx, "target", None), "kind", None) == "cpu"
    grown = over_indexed_fragments(func.body) if cpu else None
    return func.with_body(_Legalize(guard_local_stores=cpu, grown=grown).visit(func.body))
