"""AST rewriting of a kernel body so that Python control flow on runtime values
becomes IR while control flow on Python values runs as Python.

- `for x in it`: `it` may be a `T.serial/Parallel/Pipelined/...` frame or `range`
  (runtime loops, the body runs once to record it) or any Python iterable.
- `if`/`while`/`a if c else b`/`and`/`or`/`not`/`assert` branch on runtime
  conditions in IR and on compile-time values in Python.
- `name = v` where `name` holds a `T.alloc_var` buffer stores into it.
- `A: T.Tensor(...)` (no value) binds an eager-mode parameter.
"""
from __future__ import annotations

import ast
import itertools

H = "__tl__"  # name of the helper object in the kernel's namespace


def _h(attr, node):
    return ast.copy_location(ast.Attribute(value=ast.Name(id=H, ctx=ast.Load()), attr=attr,
                                           ctx=ast.Load()), node)


def _call(attr, args, node, keywords=()):
    return ast.copy_location(ast.Call(func=_h(attr, node), args=list(args), keywords=list(keywords)), node)


def _lambda(body, node):
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])
    return ast.copy_location(ast.Lambda(args=args, body=body), node)


UNSUPPORTED = {
    ast.Try: "try/except", ast.ClassDef: "class definitions", ast.Global: "`global`",
    ast.Nonlocal: "`nonlocal`", ast.AsyncFor: "async for", ast.AsyncWith: "async with",
    ast.AsyncFunctionDef: "async functions", ast.Delete: "`del`", ast.Yield: "`yield`",
    ast.YieldFrom: "`yield from`", ast.Await: "`await`",
}
if hasattr(ast, "TryStar"):
    UNSUPPORTED[ast.TryStar] = "try/except*"


class KernelRewriter(ast.NodeTransformer):
    def __init__(self):
        self.counter = itertools.count()

    def tmp(self):
        return f"__tl_t{next(self.counter)}"

    def generic_visit(self, node):
        for cls, what in UNSUPPORTED.items():
            if isinstance(node, cls):
                return ast.copy_location(ast.Expr(value=_call(
                    "unsupported", [ast.Constant(what)], node)), node) if isinstance(node, ast.stmt) else \
                    _call("unsupported", [ast.Constant(what)], node)
        return super().generic_visit(node)

    # with -----------------------------------------------------------------------
    def visit_With(self, node):
        self.generic_visit(node)
        for item in node.items:
            t = item.optional_vars
            if isinstance(t, (ast.Tuple, ast.List)) and len(t.elts) == 1:
                item.context_expr = _call("unpack_with", [item.context_expr, ast.Constant(1)], item.context_expr)
        return node

    # loops --------------------------------------------------------------------
    def visit_For(self, node):
        self.generic_visit(node)
        if isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) and \
                node.iter.func.id == "range" and not node.iter.keywords:
            # `range(n)` with a runtime bound is a serial loop (builtin range would reject it)
            node.iter = _call("range_", node.iter.args, node.iter)
        it = self.tmp()
        assign = ast.copy_location(ast.Assign(targets=[ast.Name(id=it, ctx=ast.Store())],
                                              value=_call("for_iter", [node.iter], node.iter)), node)
        loop = ast.copy_location(ast.For(target=node.target, iter=ast.Name(id=it, ctx=ast.Load()),
                                         body=node.body, orelse=node.orelse, type_comment=None), node)
        close = ast.Expr(value=_call("close_iter", [ast.Name(id=it, ctx=ast.Load())], node))
        ast.copy_location(close, node)
        tr = ast.copy_location(ast.Try(body=[loop], handlers=[], orelse=[], finalbody=[close]), node)
        return [assign, tr]

    def visit_While(self, node):
        self.generic_visit(node)
        c = self.tmp()
        assign = ast.copy_location(ast.Assign(targets=[ast.Name(id=c, ctx=ast.Store())],
                                              value=_call("cond", [node.test], node.test)), node)
        # a one-shot Python `for` (not `with`) so that `break`/`continue` in the body stay legal
        gen = self.tmp()
        loop = ast.copy_location(ast.For(target=ast.Name(id=self.tmp(), ctx=ast.Store()),
                                         iter=ast.Name(id=gen, ctx=ast.Load()),
                                         body=node.body, orelse=[], type_comment=None), node)
        runtime = [ast.copy_location(ast.Assign(targets=[ast.Name(id=gen, ctx=ast.Store())], value=_call(
            "while_iter", [_lambda(node.test, node.test)], node)), node),
            ast.copy_location(ast.Try(body=[loop], handlers=[], orelse=[], finalbody=[ast.copy_location(
                ast.Expr(value=_call("close_iter", [ast.Name(id=gen, ctx=ast.Load())], node)), node)]), node)]
        pyloop = ast.copy_location(ast.While(test=node.test, body=node.body, orelse=node.orelse), node)
        test = _call("is_runtime", [ast.Name(id=c, ctx=ast.Load())], node)
        return [assign, ast.copy_location(ast.If(test=test, body=runtime, orelse=[pyloop]), node)]

    def visit_Break(self, node):
        return ast.copy_location(ast.If(test=_call("loop_break", [], node), body=[node], orelse=[]), node)

    def visit_Continue(self, node):
        return ast.copy_location(ast.If(test=_call("loop_continue", [], node), body=[node], orelse=[]), node)

    # branches -----------------------------------------------------------------
    def visit_If(self, node):
        self.generic_visit(node)
        c = self.tmp()
        assign = ast.copy_location(ast.Assign(targets=[ast.Name(id=c, ctx=ast.Store())],
                                              value=_call("cond", [node.test], node.test)), node)
        cname = ast.Name(id=c, ctx=ast.Load())
        then_w = ast.copy_location(ast.With(items=[ast.withitem(context_expr=_call("then_", [cname], node),
                                                                optional_vars=None)], body=node.body), node)
        runtime = [then_w]
        if node.orelse:
            runtime.append(ast.copy_location(ast.With(items=[ast.withitem(
                context_expr=_call("else_", [], node), optional_vars=None)], body=node.orelse), node))
        py = ast.copy_location(ast.If(test=_call("py_bool", [cname], node), body=node.body,
                                      orelse=node.orelse), node)
        test = _call("is_runtime", [ast.Name(id=c, ctx=ast.Load())], node)
        return [assign, ast.copy_location(ast.If(test=test, body=runtime, orelse=[py]), node)]

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return _call("ifexp", [node.test, _lambda(node.body, node), _lambda(node.orelse, node)], node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        out = node.values[0]
        for v in node.values[1:]:
            out = _call(fn, [out, _lambda(v, v)], node)
        return out

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _call("not_", [node.operand], node)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        # a < b < c  ->  and_(a < b, lambda: b < c)
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(ast.copy_location(ast.Compare(left=left, ops=[op], comparators=[right]), node))
            left = right
        out = parts[0]
        for p in parts[1:]:
            out = _call("and_", [out, _lambda(p, p)], node)
        return out

    def visit_Assert(self, node):
        self.generic_visit(node)
        msg = node.msg if node.msg is not None else ast.Constant(None)
        return ast.copy_location(ast.Expr(value=_call("assert_", [node.test, msg], node)), node)

    # assignments --------------------------------------------------------------
    def visit_Assign(self, node):
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List)) and \
                isinstance(node.value, (ast.Tuple, ast.List)):
            # `a[0], a[1] = a[1], a[0]`: read every right-hand value before any store
            node.value = _call("snapshot", [node.value], node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            old = _call("lookup", [ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[]),
                                   ast.Constant(name)], node)
            node.value = _call("assign", [node.value, old], node.value)
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if isinstance(node.target, ast.Name):
            name = node.target.id
            value = ast.copy_location(ast.BinOp(left=ast.Name(id=name, ctx=ast.Load()), op=node.op,
                                                right=node.value), node)
            return ast.copy_location(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                                                value=_call("assign", [value, ast.Name(id=name, ctx=ast.Load())],
                                                            node)), node)
        return node

    def visit_AnnAssign(self, node):
        self.generic_visit(node)
        if not isinstance(node.target, ast.Name):
            return node
        name = node.target.id
        old = _call("lookup", [ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[]),
                               ast.Constant(name)], node)
        value = node.value if node.value is not None else ast.Constant(None)
        call = _call("annotate", [ast.Constant(name), old, node.annotation, value,
                                  ast.Constant(node.value is not None)], node)
        return ast.copy_location(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=call), node)

    def visit_Expr(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Constant):  # docstrings
            return node
        node.value = _call("expr_stmt", [node.value], node.value)
        return node

    def visit_Return(self, node):
        self.generic_visit(node)
        value = node.value if node.value is not None else ast.Constant(None)
        node.value = _call("ret", [value], node)
        return node

    def visit_FunctionDef(self, node):
        # nested helper functions are rewritten too (they run inside the kernel)
        self.generic_visit(node)
        return node

    def visit_Lambda(self, node):
        self.generic_visit(node)
        return node


def rewrite(tree: ast.Module) -> ast.Module:
    tree = KernelRewriter().visit(tree)
    ast.fix_missing_locations(tree)
    return tree
