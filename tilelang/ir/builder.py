"""The IR builder: a stack of statement lists that the `T` namespace appends to
while the (rewritten) kernel body runs, plus the span provider that reads the
user's current source position from the Python stack."""
from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

from tilelang.ir import stmt as S
from tilelang.ir.span import Span, frame_span, set_span_provider  # noqa: F401 (frame_span re-exported)
from tilelang.ir.dtypes import set_variable_namer

_tls = threading.local()


class Frame:
    """A scope of the kernel being built: what `with` (T.Kernel) or `for` (T.serial,
    T.Parallel, ...) enters. The published API calls these IR-builder frames."""

# code objects compiled from user kernels (rewritten): their frames give spans
USER_CODES: set = set()
class Builder:
    def __init__(self):
        self.stack: list[list] = [[]]
        self.kernel_depth = 0
        self.parallel_depth = 0    # T.Parallel loops open around the current statement
        self.vectorized_depth = 0  # T.vectorized loops likewise (T.ptx_cp_async lanes)
        self.ref_loads: dict = {}  # id -> buffer elements passed to T.Ref macro parameters
        self.macro_depth = 0       # @T.macro bodies being inlined: their `return` gives a value
        self.outputs = []          # eager mode: buffers returned by the body
        self.extra_params = []     # eager mode: T.empty outputs in creation order
        self.loop_kinds: list = []  # for break/continue: "ir" or "py"
        self.tensor_params: dict = {}  # eager mode: name -> Buffer bound by an annotation
        self.func_attrs: dict = {}     # T.annotate_pass_configs / annotate_compile_flags
        self.matched_params: dict = {}  # id(T.handle parameter) -> its T.match_buffer tensor
        self.kernel_frames: list = []
        # open block scopes, innermost last: T.Kernel and T.sblock frames, whose `annotations`
        # hold what is annotated for the whole scope (T.annotate_safe_value)
        self.block_scopes: list = []

    def emit(self, stmt):
        if stmt is not None:
            self.stack[-1].append(stmt)

    def push(self):
        self.stack.append([])

    def pop(self):
        return seq_with_lets(self.stack.pop())

    def body(self):
        """The statements recorded at the outermost level (the kernel function's body)."""
        return seq_with_lets(self.stack[0])

    @contextmanager
    def frame(self):
        self.push()
        box = []
        try:
            yield box
        finally:
            box.append(self.pop())


def seq_with_lets(stmts):
    """A statement list as one statement; `T.let(v, e)` (a LetStmt recorded without a body)
    takes the statements after it as its body."""
    stmts = list(stmts)
    for k, st in enumerate(stmts):
        if isinstance(st, S.LetStmt) and st.body is None:
            st.body = seq_with_lets(stmts[k + 1:])
            return S.seq(stmts[:k + 1])
    return S.seq(stmts)


def current() -> Builder | None:
    return getattr(_tls, "builder", None)


def require(what="this"):
    b = current()
    if b is None:
        from tilelang.ir.errors import TileLangError
        raise TileLangError(f"{what} can only be used inside a @T.prim_func kernel body")
    return b


@contextmanager
def building():
    prev = current()
    b = Builder()
    _tls.builder = b
    try:
        yield b
    finally:
        _tls.builder = prev


def emit(stmt):
    require().emit(stmt)


def _user_span() -> Span | None:
    if current() is None:
        return None
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        if code in USER_CODES:
            return frame_span(f)
        f = f.f_back
    return None


set_span_provider(_user_span)
set_variable_namer(lambda: (source_names("assign") or [None])[0] if current() is not None else None)


def source_names(pattern_kind):
    """Names the user wrote on the current source line: the assignment target of
    `x = T.alloc_...` or the loop variables of `for i, j in ...` (for readable IR)."""
    import linecache
    import re
    from tilelang.ir.span import current_span
    sp = current_span()
    if sp is None:
        return None
    line = linecache.getline(sp.file, sp.line)
    if pattern_kind == "assign":
        m = re.match(r"\s*([A-Za-z_]\w*)\s*(:[^=]*)?=[^=]", line)
        return [m.group(1)] if m else None
    m = re.match(r"\s*for\s+\(?\s*([A-Za-z_][\w\s,]*?)\)?\s+in\b", line)
    if m:
        return [n.strip() for n in m.group(1).split(",") if n.strip()]
    m = re.search(r"\bas\s+\(?\s*([A-Za-z_][\w\s,]*?)\)?\s*:", line)
    if m:
        return [n.strip() for n in m.group(1).split(",") if n.strip()]
    return None
