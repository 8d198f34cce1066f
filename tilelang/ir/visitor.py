"""Visitor and mutator bases. Subclasses override `visit_<ClassName>`; the
defaults walk (or rebuild) children."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion


# (visitor class, node class) -> the name of the most specific `visit_<Class>` method, or
# None: the walk over the node's bases (a failed getattr for most of them) ran for every
# node visited, a large part of a compile's pass time
_METHOD_NAMES: dict = {}


def _method(obj, node):
    """The most specific `visit_<Class>` for node's class (walking its bases)."""
    key = (type(obj), type(node))
    try:
        name = _METHOD_NAMES[key]
    except KeyError:
        name = None
        for cls in type(node).__mro__:
            if getattr(obj, "visit_" + cls.__name__, None) is not None:
                name = "visit_" + cls.__name__
                break
        if not any(k.startswith("visit_") for k in getattr(obj, "__dict__", ())):
            _METHOD_NAMES[key] = name   # not when an instance carries its own visit_ methods
    return None if name is None else getattr(obj, name)


class Visitor:
    def visit(self, node):
        fn = _method(self, node)
        if fn is not None:
            return fn(node)
        return self.generic_visit(node)

    def generic_visit(self, node):
        if isinstance(node, (list, tuple)):
            for n in node:
                self.visit(n)
            return
        if node is None or isinstance(node, (int, float, str, bool, Buffer)):
            return
        if isinstance(node, BufferRegion):
            for s, e in node.ranges:
                self.visit(s)
                self.visit(e)
            return
        for child in _children(node):
            self.visit(child)


def _children(node):
    if isinstance(node, (E.Var, E.IntImm, E.FloatImm, E.StringImm)):
        return []
    if isinstance(node, E.BinOp):
        return [node.a, node.b]
    if isinstance(node, E.Not):
        return [node.a]
    if isinstance(node, E.Cast):
        return [node.value]
    if isinstance(node, E.Select):
        return [node.cond, node.t, node.f]
    if isinstance(node, E.Call):
        return node.args
    if isinstance(node, E.BufferLoad):
        return node.indices
    if isinstance(node, S.SeqStmt):
        return node.stmts
    if isinstance(node, S.Evaluate):
        return [node.value]
    if isinstance(node, S.BufferStore):
        return [node.value] + node.indices
    if isinstance(node, S.For):
        return [node.min, node.extent, node.body]
    if isinstance(node, S.IfThenElse):
        return [node.cond, node.then_body, node.else_body]
    if isinstance(node, S.While):
        return [node.cond, node.body]
    if isinstance(node, S.LetStmt):
        return [node.value, node.body]
    if isinstance(node, S.KernelLaunch):
        return node.grid + node.threads + [node.body]
    if isinstance(node, S.SBlock):
        return node.reads + node.writes + [node.body]
    if isinstance(node, (S.Assert, S.Assume)):
        return [node.cond]
    if isinstance(node, S.Print):
        return [node.obj] if isinstance(node.obj, E.PrimExpr) else []
    if isinstance(node, S.StageSlot):
        return [node.slot, node.body]
    if isinstance(node, S.ProducerWarpgroup):
        return [node.body]
    if isinstance(node, S.ThreadAllReduce):
        return [node.value, node.cond, node.dst, node.identity] + node.thread_vars
    if isinstance(node, TO.Copy):
        return [node.src, node.dst]
    if isinstance(node, TO.Fill):
        return [node.dst, node.value]
    if isinstance(node, TO.Gemm):
        return [node.A, node.B, node.C]
    if isinstance(node, TO.Reduce):
        return [node.src, node.dst]
    if isinstance(node, TO.CumSum):
        return [node.src, node.dst]
    if isinstance(node, TO.Atomic):
        return [node.dst, node.value]
    if isinstance(node, S.DeclBuffer):
        p = getattr(node.buffer, "data_ptr", None)
        return [p] if p is not None else []
    if isinstance(node, TO.FinalizeReducer):
        return [node.dst] if node.dst is not None else []
    if isinstance(node, TO.ReducerInit):
        return [node.init] if node.init is not None else []
    if isinstance(node, TO.ReducerUpdate):
        return node.indices + [node.value]
    if hasattr(node, "children"):  # ops that list their own operands (ir/operand_op.py)
        return node.children()
    return []


class Mutator:
    """Rebuilds the tree bottom-up; returns the same node when nothing changed."""

    def visit(self, node):
        fn = _method(self, node)
        if fn is not None:
            return fn(node)
        return self.generic_visit(node)

    def visit_region(self, r: BufferRegion):
        ranges = [(self.visit(s), self.visit(e)) for s, e in r.ranges]
        if all(a is b and c is d for (a, c), (b, d) in zip(ranges, r.ranges)):
            return r
        out = BufferRegion(self.visit_buffer(r.buffer), ranges)
        out.span = r.span
        return out

    def visit_buffer(self, b):
        # a tensor at a computed address whose address expression this pass rewrote
        return getattr(self, "_rebuilt", {}).get(id(b), b)

    def _rebuild_address_tensor(self, b):
        """A T.make_tensor(address, ...) buffer whose address changes: a new buffer, used by
        every access below its declaration (the original is shared with other lowerings)."""
        p = self._v(b.data_ptr)
        if p is b.data_ptr:
            return b
        import copy
        nb = copy.copy(b)
        nb.data_ptr = p
        if not hasattr(self, "_rebuilt"):
            self._rebuilt = {}
        self._rebuilt[id(b)] = nb
        return nb

    def _v(self, x):
        if x is None or isinstance(x, (int, float, str, bool)):
            return x
        if isinstance(x, BufferRegion):
            return self.visit_region(x)
        if isinstance(x, Buffer):
            return self.visit_buffer(x)
        return self.visit(x)

    def generic_visit(self, node):
        n = node
        if isinstance(n, (E.Var, E.IntImm, E.FloatImm, E.StringImm)):
            return n
        if isinstance(n, E.BinOp):
            a, b = self._v(n.a), self._v(n.b)
            return n if a is n.a and b is n.b else _keep(E.BinOp(n.op, a, b, n.dtype), n)
        if isinstance(n, E.Not):
            a = self._v(n.a)
            return n if a is n.a else _keep(E.Not(a), n)
        if isinstance(n, E.Cast):
            v = self._v(n.value)
            return n if v is n.value else _keep(E.Cast(n.dtype, v), n)
        if isinstance(n, E.Select):
            c, t, f = self._v(n.cond), self._v(n.t), self._v(n.f)
            return n if c is n.cond and t is n.t and f is n.f else _keep(E.Select(c, t, f), n)
        if isinstance(n, E.Call):
            args = [self._v(a) for a in n.args]
            return n if all(a is b for a, b in zip(args, n.args)) else _keep(E.Call(n.name, args, n.dtype), n)
        if isinstance(n, E.BufferLoad):
            idx = [self._v(i) for i in n.indices]
            buf = self.visit_buffer(n.buffer)
            return n if buf is n.buffer and all(a is b for a, b in zip(idx, n.indices)) \
                else _keep(E.BufferLoad(buf, idx), n)
        if isinstance(n, S.SeqStmt):
            stmts = [self._v(s) for s in n.stmts]
            if all(a is b for a, b in zip(stmts, n.stmts)):
                return n
            return _keep(S.seq(stmts), n) if stmts else None
        if isinstance(n, S.Evaluate):
            v = self._v(n.value)
            return n if v is n.value else _keep(S.Evaluate(v), n)
        if isinstance(n, S.BufferStore):
            v = self._v(n.value)
            idx = [self._v(i) for i in n.indices]
            buf = self.visit_buffer(n.buffer)
            if v is n.value and buf is n.buffer and all(a is b for a, b in zip(idx, n.indices)):
                return n
            return _keep(S.BufferStore(buf, v, idx), n)
        if isinstance(n, S.DeclBuffer):
            b = self.visit_buffer(n.buffer)
            if getattr(b, "data_ptr", None) is not None:
                b = self._rebuild_address_tensor(b)
            return n if b is n.buffer else _keep(S.DeclBuffer(b), n)
        if isinstance(n, S.For):
            mn, ext, body = self._v(n.min), self._v(n.extent), self._v(n.body)
            if mn is n.min and ext is n.extent and body is n.body:
                return n
            return _keep(S.For(n.var, mn, ext, n.kind, body, n.annotations, n.step), n)
        if isinstance(n, S.IfThenElse):
            c, t, e = self._v(n.cond), self._v(n.then_body), self._v(n.else_body)
            if c is n.cond and t is n.then_body and e is n.else_body:
                return n
            return _keep(S.IfThenElse(c, t, e), n)
        if isinstance(n, S.While):
            c, b = self._v(n.cond), self._v(n.body)
            return n if c is n.cond and b is n.body else _keep(S.While(c, b), n)
        if isinstance(n, S.LetStmt):
            v, b = self._v(n.value), self._v(n.body)
            return n if v is n.value and b is n.body else _keep(S.LetStmt(n.var, v, b), n)
        if isinstance(n, S.KernelLaunch):
            grid = [self._v(g) for g in n.grid]
            body = self._v(n.body)
            if body is n.body and all(a is b for a, b in zip(grid, n.grid)):
                return n
            return _keep(S.KernelLaunch(grid, n.threads, n.block_vars, n.thread_vars, body, n.annotations), n)
        if isinstance(n, S.SBlock):
            reads, writes = [self._v(r) for r in n.reads], [self._v(w) for w in n.writes]
            body = self._v(n.body)
            if body is n.body and all(a is b for a, b in zip(reads + writes, n.reads + n.writes)):
                return n
            return _keep(S.SBlock(n.name, body, reads, writes, n.annotations), n)
        if isinstance(n, S.Assert):
            c = self._v(n.cond)
            return n if c is n.cond else _keep(S.Assert(c, n.message), n)
        if isinstance(n, S.Assume):
            c = self._v(n.cond)
            return n if c is n.cond else _keep(S.Assume(c), n)
        if isinstance(n, S.Print):
            o = self._v(n.obj) if isinstance(n.obj, E.PrimExpr) else n.obj
            return n if o is n.obj else _keep(S.Print(o, n.msg), n)
        if isinstance(n, (S.Break, S.Continue, S.Barrier)):
            return n
        if isinstance(n, S.ProducerWarpgroup):
            b = self._v(n.body)
            return n if b is n.body else _keep(S.ProducerWarpgroup(n.lo, b), n)
        if isinstance(n, S.StageSlot):
            sl, b = self._v(n.slot), self._v(n.body)
            return n if sl is n.slot and b is n.body else _keep(S.StageSlot(n.buffers, sl, n.stages, b), n)
        if isinstance(n, S.ThreadAllReduce):
            v, c, d, i = self._v(n.value), self._v(n.cond), self._v(n.dst), self._v(n.identity)
            tv = [self._v(t) for t in n.thread_vars]
            if v is n.value and c is n.cond and d is n.dst and i is n.identity and \
                    all(a is b for a, b in zip(tv, n.thread_vars)):
                return n
            return _keep(S.ThreadAllReduce(n.lhs, n.rhs, n.combine, i, v, c, d, tv), n)
        if isinstance(n, TO.Copy):
            s, d = self._v(n.src), self._v(n.dst)
            return n if s is n.src and d is n.dst else _keep(TO.Copy(s, d, n.annotations), n)
        if isinstance(n, TO.Fill):
            d, v = self._v(n.dst), self._v(n.value)
            return n if d is n.dst and v is n.value else _keep(TO.Fill(d, v), n)
        if isinstance(n, TO.Gemm):
            a, b, c = self._v(n.A), self._v(n.B), self._v(n.C)
            if a is n.A and b is n.B and c is n.C:
                return n
            return _keep(TO.Gemm(a, b, c, n.trans_A, n.trans_B, n.policy, n.clear_accum, n.k_pack,
                                 n.wg_wait, n.annotations), n)
        if isinstance(n, TO.Reduce):
            s, d = self._v(n.src), self._v(n.dst)
            return n if s is n.src and d is n.dst else _keep(TO.Reduce(n.kind, s, d, n.dim, n.clear, n.nan_propagate, n.batch), n)
        if isinstance(n, TO.CumSum):
            s, d = self._v(n.src), self._v(n.dst)
            return n if s is n.src and d is n.dst else _keep(TO.CumSum(s, d, n.dim, n.reverse, n.kind), n)
        if isinstance(n, TO.FinalizeReducer):
            b = self.visit_buffer(n.buffer)
            d = self._v(n.dst) if n.dst is not None else None
            return n if b is n.buffer and d is n.dst else _keep(TO.FinalizeReducer(b, n.op, d, n.batch), n)
        if isinstance(n, TO.ReducerInit):
            b, v = self.visit_buffer(n.buffer), self._v(n.init)
            return n if b is n.buffer and v is n.init else _keep(TO.ReducerInit(b, v), n)
        if isinstance(n, TO.ReducerUpdate):
            idx, v = [self._v(i) for i in n.indices], self._v(n.value)
            if v is n.value and all(a is b for a, b in zip(idx, n.indices)):
                return n
            return _keep(TO.ReducerUpdate(n.buffer, idx, v), n)
        if isinstance(n, TO.Atomic):
            d, v = self._v(n.dst), self._v(n.value)
            return n if d is n.dst and v is n.value else _keep(TO.Atomic(n.kind, d, v, n.return_prev, n.memory_order,
                                                                                    n.use_tma), n)
        if hasattr(n, "map_children"):  # ops that rebuild themselves (ir/operand_op.py)
            out = n.map_children(self._v)
            return n if out is n else _keep(out, n)
        raise TypeError(f"Mutator: unknown node {type(n).__name__}")


_TAKES_ANNOTATIONS: dict = {}


def _takes_annotations(cls) -> bool:
    """Whether `cls(...)` is given its annotations (then an empty dict is the caller's choice)."""
    if cls not in _TAKES_ANNOTATIONS:
        import inspect
        try:
            _TAKES_ANNOTATIONS[cls] = "annotations" in inspect.signature(cls).parameters
        except (TypeError, ValueError):
            _TAKES_ANNOTATIONS[cls] = False
    return _TAKES_ANNOTATIONS[cls]


def _keep(new, old):
    """`new`, rebuilt from `old` with new children, keeps what `old` carried besides them:
    its source span, and the annotations passes recorded on it where its constructor takes
    none (a tile op's form; a node built with annotations keeps the ones it was given, even
    none: flatten_sblocks drops the consumed ones)."""
    new.span = old.span
    ann = getattr(old, "annotations", None)
    if ann and not getattr(new, "annotations", None) and not _takes_annotations(type(new)):
        new.annotations = dict(ann)
    return new


class _VarCollector(Visitor):
    def __init__(self):
        self.vars = []
        self.seen = set()

    def visit_Var(self, v):
        if id(v) not in self.seen:
            self.seen.add(id(v))
            self.vars.append(v)


def collect_vars(node):
    c = _VarCollector()
    c.visit(node)
    return c.vars


class Substitute(Mutator):
    """Replace variables (by identity) with expressions."""

    def __init__(self, mapping):
        # keyed by identity: Var's `==` builds an expression
        self.mapping = {id(k): v for k, v in mapping.items()}

    def visit_Var(self, v):
        return self.mapping.get(id(v), v)


def substitute(node, mapping):
    if not mapping:
        return node
    return Substitute(mapping).visit(node)


def walk(node, fn):
    """Call fn on every statement/expression node (pre-order)."""
    class _W(Visitor):
        def visit(self, n):
            fn(n)
            return super().visit(n)
    _W().visit(node)
