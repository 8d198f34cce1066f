"""Python function -> IR. The kernel's source is parsed, rewritten (see
`rewriter.py`), compiled against the user's file and line numbers, and run with the
IR builder active; every node built records the user's source span."""
from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import types

from tilelang.ir import builder as B
from tilelang.frontend.control import HELPERS
from tilelang.frontend.rewriter import rewrite
from tilelang.ir.errors import TileLangError, UnknownNameError, UnsupportedConstructError, located_error_class
from tilelang.ir.span import Span

_cache: dict = {}


class KernelSource:
    def __init__(self, file, first_line, text):
        self.file, self.first_line, self.text = file, first_line, text


def _register_codes(code):
    B.USER_CODES.add(code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _register_codes(c)


def _closure_vars(func):
    out = {}
    if func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                out[name] = cell.cell_contents
            except ValueError:  # empty cell
                pass
    return out


def _source(func):
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError) as e:
        raise TileLangError(f"cannot read the source of `{getattr(func, '__name__', func)}`: {e}",
                            hint="kernels must be defined in a file (not typed into a REPL)") from None
    text = "".join(lines)
    file = inspect.getsourcefile(func) or func.__code__.co_filename
    return file, first, text


def rewritten_function(func):
    """A copy of `func` whose body is rewritten for tracing, with the same globals and
    (snapshotted) closure values."""
    key = func.__code__
    entry = _cache.get(key)
    if entry is None:
        file, first, text = _source(func)
        ded = textwrap.dedent(text)
        indent = len(text.splitlines()[0]) - len(ded.splitlines()[0])
        tree = ast.parse(ded)
        fdef = tree.body[0]
        if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise TileLangError(f"`{func.__name__}` is not defined with `def`")
        fdef.decorator_list = []
        # Annotations were evaluated when the user's `def` ran (they may name locals of the
        # enclosing factory that the closure does not capture); re-evaluating them here
        # could fail, and the parameters are built from `func.__annotations__` anyway.
        for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs:
            a.annotation = None
        fdef.returns = None
        for node in ast.walk(tree):
            if hasattr(node, "col_offset") and node.col_offset is not None:
                node.col_offset += indent
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += indent
        ast.increment_lineno(tree, first - 1)
        tree = rewrite(tree)
        code = compile(tree, file, "exec")
        _register_codes(code)
        entry = (code, fdef.name, KernelSource(file, first, text))
        _cache[key] = entry
    code, name, src = entry
    ns = dict(func.__globals__)
    ns.update(_closure_vars(func))
    ns["__tl__"] = HELPERS
    exec(code, ns)
    new = ns[name]
    new.__defaults__ = func.__defaults__
    new.__kwdefaults__ = func.__kwdefaults__
    new.__tl_source__ = src
    return new


def user_span_from_traceback(tb) -> Span | None:
    span = None
    while tb is not None:
        if tb.tb_frame.f_code in B.USER_CODES:
            f = tb.tb_frame
            # the traceback entry's own position (f_lasti at the raising instruction)
            span = _tb_span(tb)
        tb = tb.tb_next
    return span


def _tb_span(tb):
    code = tb.tb_frame.f_code
    pos = list(code.co_positions()) if hasattr(code, "co_positions") else []
    i = tb.tb_lasti // 2
    if 0 <= i < len(pos) and pos[i][0] is not None:
        line, end_line, col, end_col = pos[i]
        return Span(code.co_filename, line, col or 0, end_col if end_line == line else None)
    return Span(code.co_filename, tb.tb_lineno, 0)


def as_user_error(e: BaseException) -> TileLangError:
    """Turn an exception raised while tracing a kernel into a source-located error."""
    tb = e.__traceback__
    span = user_span_from_traceback(tb)
    if isinstance(e, TileLangError):
        if e.span is None:
            e.span = span
        return e
    if isinstance(e, NameError):
        name = getattr(e, "name", None) or str(e)
        err = UnknownNameError(f"unknown name `{name}`" if getattr(e, "name", None) else str(e), span,
                               hint="define it before the kernel, pass it as an argument of the "
                                    "factory, or check the spelling (TileLang names live in `T.`)")
    elif isinstance(e, (SyntaxError,)):
        err = UnsupportedConstructError(str(e), span)
    elif isinstance(e, RecursionError):
        err = TileLangError("recursion too deep while tracing the kernel", span)
    else:
        cls = located_error_class(type(e))
        msg = str(e) if cls is not TileLangError else f"{type(e).__name__}: {e}"
        if isinstance(e, KeyError) and len(e.args) == 1:
            msg = repr(e.args[0])
        err = cls(msg, span)
    err.__cause__ = e
    return err


def run_traced(fn, /, *args, **kwargs):
    """Run a rewritten function; convert any error into a source-located one."""
    try:
        return fn(*args, **kwargs)
    except TileLangError as e:
        raise as_user_error(e)
    except Exception as e:  # noqa: BLE001 - every error from user code gets a span
        raise as_user_error(e) from None


def raise_clean(e: TileLangError):
    """Re-raise a user error without our internal frames."""
    raise e.with_traceback(None) from None


def forget_source(filename):
    """Drop what was cached for the kernels of `filename` (rewritten code, the user code
    set, code positions): the language server runs a document again on every edit, and
    each run compiles new code objects."""
    from tilelang.ir import span as _span
    for key in [k for k, entry in _cache.items() if entry[2].file == filename]:
        del _cache[key]
    for code in [c for c in B.USER_CODES if c.co_filename == filename]:
        B.USER_CODES.discard(code)
    for code in [c for c in _span._positions_cache if c.co_filename == filename]:
        del _span._positions_cache[code]
