"""Typed errors for user mistakes. Each carries the user's source span and renders
as `file:line:col`, the source line, a caret under the code, and what to do."""
from __future__ import annotations

import linecache

from tilelang.ir.span import Span, current_span


class TileLangError(Exception):
    """Base of every error caused by the user's kernel or call."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None):
        self.message = message
        self.span = span if span is not None else current_span()
        self.hint = hint
        super().__init__(message)

    def __str__(self):
        return render(self.message, self.span, self.hint, type(self).__name__)


def render(message, span, hint=None, kind="error"):
    out = [message]
    if span is not None:
        out = [f"{span.file}:{span.line}:{span.col + 1}: {kind}: {message}"]
        text = linecache.getline(span.file, span.line).rstrip("\n")
        if text:
            out.append(f"    {text}")
            width = max(1, (span.end_col - span.col) if span.end_col and span.end_col > span.col else 1)
            out.append("    " + " " * span.col + "^" * width)
    if hint:
        out.append(f"hint: {hint}")
    return "\n".join(out)


# A located error keeps the kind of exception the published package raises in the same
# place, so `except TypeError` / `pytest.raises(ValueError)` written against it still match.
_BUILTIN_KINDS = (TypeError, ValueError, AttributeError, IndexError, KeyError, AssertionError,
                  RuntimeError, NotImplementedError, ZeroDivisionError, OverflowError)
_located_classes: dict = {}


def located_error_class(kind: type) -> type:
    """A subclass of both TileLangError and `kind` (a builtin exception class), named
    after `kind`; TileLangError itself for any other class."""
    base = next((k for k in kind.__mro__ if k in _BUILTIN_KINDS), None)
    if base is None:
        return TileLangError
    cls = _located_classes.get(base)
    if cls is None:
        cls = type(base.__name__, (TileLangError, base), {"__module__": __name__})
        _located_classes[base] = cls
    return cls


def located(kind: type, message: str, span: Span | None = None, hint: str | None = None) -> TileLangError:
    """A source-located error that is also an instance of `kind`."""
    return located_error_class(kind)(message, span, hint)


class ShapeMismatchError(TileLangError, ValueError, AssertionError):
    """Shapes that do not fit (the published package asserts on these: AssertionError)."""


class DTypeMismatchError(TileLangError, TypeError):
    pass


class UnsupportedConstructError(TileLangError):
    pass


class UnknownNameError(TileLangError, NameError):
    pass


class OutOfScopeError(TileLangError, NameError, RuntimeError):
    """A variable used outside the region that defines it (the published package raises
    RuntimeError here)."""


class ArgumentError(TileLangError):
    """A call-time argument that does not fit the kernel's signature."""


class LoweringError(TileLangError):
    pass


class TargetFeatureError(LoweringError, RuntimeError):
    """The kernel asks for an instruction the target (or this backend) does not have."""


class CompileError(TileLangError):
    """A backend compiler failed on generated code (a bug on our side, not the user's)."""


class RuntimeValueAsPythonBool(TileLangError):
    def __init__(self, expr):
        super().__init__(
            f"the runtime value `{expr}` is used where Python needs a compile-time bool",
            hint="use it in an `if` statement inside the kernel (it becomes a runtime branch), "
                 "or T.if_then_else(cond, a, b) in an expression")


class UnknownDTypeError(TileLangError, ValueError):
    def __init__(self, name, known):
        import difflib
        from tilelang.ir.span import caller_span
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close else
                "dtypes are names such as 'float16', 'bfloat16', 'float32', 'int8', 'float8_e4m3', "
                "or T.float16 ...")
        super().__init__(f"unknown dtype {name!r}", current_span() or caller_span(), hint)


class StridedSliceError(TileLangError, ValueError, RuntimeError):
    """`B[0:10:2]`: a region with a step (the published package raises RuntimeError)."""

    def __init__(self, buf, k):
        super().__init__(f"buffer `{buf.name}` is sliced with step {k.step}; regions are contiguous ranges",
                         hint="copy with a T.Parallel loop instead: `for i in T.Parallel(n): B[i] = A[2 * i]`")


class IndexTypeError(TileLangError, TypeError):
    def __init__(self, buf, index):
        super().__init__(f"buffer `{buf.name}` is indexed with the float {index!r}; indices are integers",
                         hint="compute the index with integer arithmetic (// instead of /), or T.cast(x, 'int32')")


class IndexArityError(TileLangError, IndexError):
    def __init__(self, buf, n):
        super().__init__(f"buffer `{buf.name}` has {buf.ndim} dimension(s) but is indexed with {n}",
                         hint=f"index it with {buf.ndim} indices, e.g. {buf.name}[{', '.join('ijkl'[:buf.ndim])}]")
