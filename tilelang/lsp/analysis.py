"""What the language server knows about one document, without pygls: the document's
module-level code is run statement by statement in a fresh module, its kernels are traced
(module-level `@T.prim_func`s, `@tilelang.jit` factories and eager kernels, plain factories
that define a `@T.prim_func`, `@tilelang.autotune` factories) with the parameters of
`# tilelang:` comments or their defaults, and the traced IR gives each buffer's shape, dtype
and scope and each T.Parallel / T.Pipelined loop's extents; failures become diagnostics at
the user's line. Kernels are never compiled for a device nor run: creating a `JITKernel` or
autotuning stops the statement that does it (the kernel it was given is still shown).

Positions in the results are 0-based lines and columns in characters (code points); the
server converts columns to the encoding its client negotiated."""
from __future__ import annotations

import __future__ as future_flags
import ast
import builtins
import contextlib
import inspect
import linecache
import os
import signal
import sys
import threading
import time
import types
from dataclasses import asdict, dataclass, field

from tilelang.lsp.params import find_comments, values_for

MODULE_NAME = "__tilelang_lsp__"


@dataclass
class Range:
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass
class Diagnostic:
    range: Range
    message: str
    severity: str = "error"      # error | warning | information
    code: str = ""               # the error's class name


@dataclass
class BufferInfo:
    name: str
    scope: str                   # global | shared | fragment | local | var | ...
    shape: list
    dtype: str
    kind: str                    # parameter | output | alloc
    line: int                    # where it is declared (0-based)
    hint_at: tuple | None = None  # (line, col) of its inlay hint

    def label(self):
        return f"{self.scope} {self.dtype}[{', '.join(self.shape)}]"


@dataclass
class LoopInfo:
    kind: str                    # parallel | pipelined
    extents: list
    stages: int | None
    hint_at: tuple

    def label(self):
        if self.kind == "pipelined":
            n = self.stages
            return f"{self.extents[0]} iterations" + (f", {n} stage{'s' if n != 1 else ''}" if n else "")
        return " × ".join(self.extents)


@dataclass
class KernelInfo:
    name: str
    first_line: int              # 0-based lines of the kernel's `def` (decorators included)
    last_line: int
    params: dict                 # factory parameter -> repr of the value it was traced with
    buffers: list = field(default_factory=list)
    loops: list = field(default_factory=list)

    def buffer(self, name):
        return next((b for b in self.buffers if b.name == name), None)


@dataclass
class Analysis:
    path: str
    kernels: list = field(default_factory=list)
    diagnostics: list = field(default_factory=list)
    elapsed_ms: float = 0.0
    funcs: list = field(default_factory=list, repr=False)   # the traced PrimFuncs (not sent)

    def to_dict(self):
        d = asdict(self)
        d.pop("funcs")
        return d

    @staticmethod
    def from_dict(d):
        ks = []
        for k in d["kernels"]:
            k = dict(k)
            k["buffers"] = [BufferInfo(**dict(b, hint_at=tuple(b["hint_at"]) if b["hint_at"] else None))
                            for b in k["buffers"]]
            k["loops"] = [LoopInfo(**dict(lp, hint_at=tuple(lp["hint_at"]))) for lp in k["loops"]]
            ks.append(KernelInfo(**k))
        ds = [Diagnostic(Range(**x["range"]), x["message"], x["severity"], x["code"]) for x in d["diagnostics"]]
        return Analysis(d["path"], ks, ds, d["elapsed_ms"])

    def kernel_at(self, line):
        """The kernel whose definition holds 0-based `line` (the innermost)."""
        inside = [k for k in self.kernels if k.first_line <= line <= k.last_line]
        return min(inside, key=lambda k: k.last_line - k.first_line) if inside else None


class KernelRunBlocked(BaseException):
    """Raised where the document would compile or run a kernel (not an Exception, so the
    document's own `except Exception` does not swallow it)."""


class AnalysisTimeout(BaseException):
    pass


# ---------------------------------------------------------------------------------------
# positions

class _Text:
    def __init__(self, text):
        self.lines = text.splitlines()

    def col(self, line1, byte_col):
        """The character column of a UTF-8 byte column (Python's AST and code positions)
        on 1-based line `line1`."""
        if not 1 <= line1 <= len(self.lines) or byte_col is None:
            return 0
        s = self.lines[line1 - 1]
        return len(s.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))

    def line_end(self, line1):
        if not 1 <= line1 <= len(self.lines):
            return 0
        return len(self.lines[line1 - 1].rstrip())

    def range(self, line1, col, end_line1=None, end_col=None) -> Range:
        """A Range from 1-based lines and byte columns; no end column: to the line's end."""
        end_line1 = end_line1 or line1
        start = self.col(line1, col)
        end = self.col(end_line1, end_col) if end_col is not None else self.line_end(end_line1)
        if end_line1 == line1 and end <= start:
            end = self.line_end(line1)
        return Range(line1 - 1, start, end_line1 - 1, max(end, start))

    def first_code_col(self, line1):
        if not 1 <= line1 <= len(self.lines):
            return 0
        s = self.lines[line1 - 1]
        return len(s.encode("utf-8")) - len(s.lstrip().encode("utf-8"))


def _tb_position(tb):
    """(1-based line, byte col, byte end col or None) of a traceback entry."""
    code = tb.tb_frame.f_code
    pos = list(code.co_positions()) if hasattr(code, "co_positions") else []
    i = tb.tb_lasti // 2
    if 0 <= i < len(pos) and pos[i][0] is not None:
        line, end_line, col, end_col = pos[i]
        return line, col or 0, end_col if end_line == line else None
    return tb.tb_lineno, None, None


def _frame_in(tb, path):
    """The innermost traceback entry in the document `path`, or None."""
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            found = tb
        tb = tb.tb_next
    return found


# ---------------------------------------------------------------------------------------
# running the document

@contextlib.contextmanager
def _kernels_not_run(recorded):
    """Within: creating a JITKernel (compiling) records its PrimFunc and stops the
    statement; autotuning stops it too."""
    from tilelang.jit.kernel import JITKernel
    from tilelang.autotuner.decorator import AutoTuneImpl
    from tilelang.autotuner.tuner import AutoTuner

    def no_compile(self, func, *args, **kwargs):
        recorded.append(func)
        raise KernelRunBlocked("compile")

    def no_tune(self, *args, **kwargs):
        raise KernelRunBlocked("autotune")
    saved = (JITKernel.__init__, AutoTuneImpl.__call__, AutoTuner.run)
    JITKernel.__init__, AutoTuneImpl.__call__, AutoTuner.run = no_compile, no_tune, no_tune
    try:
        yield
    finally:
        JITKernel.__init__, AutoTuneImpl.__call__, AutoTuner.run = saved


IMPORT_ALLOWANCE = 60.0   # s of imports (torch takes seconds, more on a loaded machine) beyond the limit


def _importing(frame):
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def _time_limit(seconds):
    """Interrupt the document's code after `seconds` (the main thread only: a signal).
    Time spent importing modules does not count, up to IMPORT_ALLOWANCE more: a module
    interrupted half-imported would break every later analysis in the process."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    deadline = time.monotonic() + seconds + IMPORT_ALLOWANCE

    def on_alarm(signum, frame):
        if _importing(frame) and time.monotonic() < deadline:
            signal.setitimer(signal.ITIMER_REAL, 0.2)   # look again once the import is done
            return
        raise AnalysisTimeout(f"the document's code did not finish within {seconds:g} s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def _document_module(path, text):
    """A fresh module for the document: its text in linecache (for the tracer's
    `inspect.getsource`), its folder on sys.path, registered in sys.modules while it runs."""
    mod = types.ModuleType(MODULE_NAME)
    mod.__file__ = path
    mod.__builtins__ = builtins
    linecache.cache[path] = (len(text), None, text.splitlines(True), path)
    folder = os.path.dirname(os.path.abspath(path))
    saved_main = sys.modules.get(MODULE_NAME)
    sys.modules[MODULE_NAME] = mod
    sys.path.insert(0, folder)
    try:
        yield mod
    finally:
        try:
            sys.path.remove(folder)
        except ValueError:
            pass
        if saved_main is None:
            sys.modules.pop(MODULE_NAME, None)
        else:
            sys.modules[MODULE_NAME] = saved_main


def _future_flags(tree):
    flags = 0
    for st in tree.body:
        if isinstance(st, ast.ImportFrom) and st.module == "__future__":
            for a in st.names:
                feat = getattr(future_flags, a.name, None)
                if feat is not None:
                    flags |= feat.compiler_flag
    return flags


def _bound_names(st):
    out = set()
    for node in ast.walk(st):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return out


class _Analyzer:
    def __init__(self, text, path):
        self.text, self.path = text, path
        self.pos = _Text(text)
        self.result = Analysis(path)
        self.recorded = []        # PrimFuncs handed to a (blocked) compile
        self.failed_names = set()  # names a failed statement would have bound

    # diagnostics ---------------------------------------------------------------------
    def add(self, rng, message, severity="error", code=""):
        self.result.diagnostics.append(Diagnostic(rng, message, severity, code))

    def add_exception(self, e, fallback_line, severity=None):
        """One diagnostic for an exception: at its span (our located errors) or at the
        innermost frame of the document in its traceback, else at `fallback_line`."""
        from tilelang.ir.errors import TileLangError
        if isinstance(e, TileLangError):
            msg = e.message + (f"\nhint: {e.hint}" if e.hint else "")
            sp = e.span
            if sp is not None and sp.file == self.path:
                self.add(self.pos.range(sp.line, sp.col, None, sp.end_col), msg, severity or "error",
                         type(e).__name__)
                return
        elif isinstance(e, SyntaxError) and e.filename == self.path and e.lineno:
            self.add(self.pos.range(e.lineno, (e.offset or 1) - 1, e.end_lineno,
                                    (e.end_offset - 1) if e.end_offset else None),
                     f"SyntaxError: {e.msg}", "error", "SyntaxError")
            return
        else:
            msg = f"{type(e).__name__}: {e}"
        tb = _frame_in(e.__traceback__, self.path)
        if tb is not None:
            line, col, end = _tb_position(tb)
            rng = self.pos.range(line, col if col is not None else self.pos.first_code_col(line), None, end)
        else:
            rng = self.pos.range(fallback_line, self.pos.first_code_col(fallback_line))
        self.add(rng, msg, severity or "error", type(e).__name__)

    # running -------------------------------------------------------------------------
    def run_module(self, tree, ns):
        flags = _future_flags(tree)
        for st in tree.body:
            code = compile(ast.Module([st], type_ignores=[]), self.path, "exec", flags=flags, dont_inherit=True)
            try:
                exec(code, ns)  # noqa: S102 - the user's own document, in the server's worker
            except KernelRunBlocked:
                self.failed_names |= _bound_names(st)
            except AnalysisTimeout as e:
                self.add_exception(e, st.lineno)
                raise
            except (Exception, SystemExit, KeyboardInterrupt) as e:  # noqa: BLE001 - one diagnostic each
                self.failed_names |= _bound_names(st)
                if isinstance(e, NameError) and getattr(e, "name", None) in self.failed_names:
                    continue   # a consequence of an earlier failure, reported there
                from tilelang.ir.errors import TileLangError
                self.add_exception(e, st.lineno, "error" if isinstance(e, TileLangError) else "warning")

    def kernels_of(self, tree, ns):
        """(definition line, what to trace) for every kernel object the module bound,
        in document order."""
        from tilelang.ir.function import PrimFunc
        from tilelang.jit import JITImpl
        from tilelang.jit.eager import EagerKernel
        from tilelang.autotuner.decorator import AutoTuneImpl
        defs = {}
        for st in tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([d.lineno for d in st.decorator_list] + [st.lineno])
                defs[st.name] = (first, st)
        out = []
        for name, obj in list(ns.items()):
            if isinstance(obj, AutoTuneImpl):
                obj = obj.jit_impl
            if isinstance(obj, PrimFunc):
                if obj.source and obj.source[0] == self.path:
                    out.append((obj.source[2], "traced", obj, name, None))
            elif isinstance(obj, (JITImpl, EagerKernel)) and name in defs:
                out.append((defs[name][0], "factory", obj, name, defs[name][1]))
            elif isinstance(obj, types.FunctionType) and name in defs and _defines_prim_func(defs[name][1]):
                out.append((defs[name][0], "factory", obj, name, defs[name][1]))
        out.sort(key=lambda x: x[0])
        return out

    def trace_factory(self, obj, name, node, def_line, comments, lines):
        """The PrimFunc a factory (defined by the AST `node`) builds with the comment's
        values / its defaults, or None (with a diagnostic unless the module's code already
        called it: the kernel it compiled is shown)."""
        from tilelang.ir.function import PrimFunc
        from tilelang.jit import JITImpl, not_a_prim_func
        from tilelang.jit.eager import EagerKernel
        values = values_for(comments, lines, def_line)
        fn = obj.func if isinstance(obj, (JITImpl, EagerKernel)) else obj
        sig = inspect.signature(fn)
        tensors = set()   # eager tensor parameters: bound by their annotation, not by a value
        if isinstance(obj, EagerKernel):
            from tilelang.frontend.annotated import annotated_names
            tensors = {n for n in sig.parameters if _is_tensor_param(fn, n)} | annotated_names(fn)
        args, missing = {}, []
        for p in sig.parameters.values():
            if p.name in values:
                args[p.name] = values[p.name]
            elif p.default is not inspect.Parameter.empty:
                args[p.name] = p.default
            elif p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            elif p.name not in tensors:
                missing.append(p.name)
        if isinstance(obj, EagerKernel):   # sizes read off tensors: the language server has none
            missing += [c for c in _const_names(node) if c not in values]
        def_node_line = fn.__code__.co_firstlineno
        if missing:
            if any(node.lineno <= pf.source[2] <= node.end_lineno for pf in self.recorded if pf.source):
                return None, args
            example = ", ".join(f"{m}=..." for m in missing)
            self.add(self._def_name_range(node),
                     f"`{name}` is not traced: no value for {', '.join(missing)}. Add a comment "
                     f"`# tilelang: {example}` above it, or give the parameters defaults.",
                     "information", "MissingParameters")
            return None, args
        try:
            if isinstance(obj, EagerKernel):
                consts = {k: v for k, v in values.items() if k not in sig.parameters}
                bound = sig.bind_partial(**{k: v for k, v in args.items() if k not in tensors})
                pf = obj.trace(bound, consts)[0]
            else:
                pf = fn(**args)
                if not isinstance(pf, PrimFunc):
                    raise not_a_prim_func(fn, pf)
        except KernelRunBlocked:
            return (self.recorded[-1] if self.recorded else None), args
        except AnalysisTimeout as e:
            self.add_exception(e, def_node_line)
            raise
        except BaseException as e:  # noqa: BLE001 - the factory is the user's code
            self.add_exception(e, def_node_line)
            return None, args
        return pf, args

    def _def_name_range(self, node):
        """The name in `def name(`."""
        line = self.pos.lines[node.lineno - 1]
        k = line.find(f"def {node.name}")
        start = len(line[:k + 4].encode("utf-8")) if k >= 0 else node.col_offset
        return self.pos.range(node.lineno, start, node.lineno, start + len(node.name.encode("utf-8")))


def _defines_prim_func(fdef):
    for sub in ast.walk(fdef):
        if sub is not fdef and isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any("prim_func" in ast.unparse(d) for d in sub.decorator_list):
                return True
    return False


def _const_names(fdef):
    """The names an eager body declares with `T.const("M N")`."""
    out = []
    for sub in ast.walk(fdef):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "const" \
                and sub.args and isinstance(sub.args[0], ast.Constant) and isinstance(sub.args[0].value, str):
            out += sub.args[0].value.replace(",", " ").split()
    return out


def _is_tensor_param(fn, name):
    from tilelang.language.proxy import TensorType
    ann = getattr(fn, "__annotations__", {}).get(name)
    return isinstance(ann, TensorType) or (isinstance(ann, str) and "Tensor" in ann)


# ---------------------------------------------------------------------------------------
# IR -> buffers and loops

_SCOPE_NAMES = {"local.fragment": "fragment", "local.var": "var"}


def scope_name(scope):
    return _SCOPE_NAMES.get(scope, scope)


def _dim(d):
    from tilelang.ir.printer import expr_str
    return str(d) if isinstance(d, int) else expr_str(d)


class _SourceIndex:
    """Where hints go, from the document's AST."""

    def __init__(self, tree, pos):
        self.pos = pos
        self.assigns = []     # (node, target Name node)
        self.fors = {}        # (line, byte col) -> ast.For
        self.defs = []        # FunctionDef nodes
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.assigns.append((node, node.targets[0]))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                self.assigns.append((node, node.target))
            elif isinstance(node, ast.For):
                self.fors[(node.lineno, node.col_offset)] = node
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defs.append(node)

    def def_at(self, first_line):
        for d in self.defs:
            if min([x.lineno for x in d.decorator_list] + [d.lineno]) == first_line:
                return d
        return None

    def _after(self, node):
        return (node.end_lineno - 1, self.pos.col(node.end_lineno, node.end_col_offset))

    def buffer_hint(self, buf, fdef, kind):
        """((line, col) after the name or the annotation that declares `buf`, the name the
        source gives it) or (None, buf.name)."""
        bare_arg = None
        if fdef is not None and kind == "parameter":
            for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs:
                if a.arg == buf.name:
                    if a.annotation is not None:
                        return self._after(a.annotation), a.arg
                    bare_arg = a   # annotated in the body (eager style), else here
        sp = buf.span
        if sp is not None and sp.file is not None:
            for node, target in self.assigns:
                value = node.value if node.value is not None else node.annotation
                if _contains(value, sp.line, sp.col):
                    return self._after(target if node.value is not None else node.annotation), target.id
        if fdef is not None:   # by name: eager annotations (`A: T.Tensor(...)`), outputs
            for node, target in self.assigns:
                if target.id == buf.name and _contains(fdef, node.lineno, node.col_offset):
                    return self._after(node.annotation if isinstance(node, ast.AnnAssign) and node.value is None
                                       else target), target.id
        return (self._after(bare_arg), bare_arg.arg) if bare_arg is not None else (None, buf.name)


def _contains(node, line, col):
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    return start <= (line, col) < end or (start == end == (line, col))


def kernel_info(pf, index: _SourceIndex, params: dict, path: str) -> KernelInfo | None:
    from tilelang.ir import stmt as S
    from tilelang.ir.buffer import Buffer
    from tilelang.ir.visitor import walk
    if not pf.source or pf.source[0] != path:
        return None
    _, src_text, first = pf.source
    n_lines = len(src_text.splitlines())
    fdef = index.def_at(first)
    info = KernelInfo(pf.name, first - 1, first - 1 + max(n_lines, 1) - 1,
                      {k: repr(v) for k, v in params.items()})
    declared = set()   # the parameter names the source declares (others are T.empty outputs)
    if fdef is not None:
        declared = {a.arg for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs}
    seen = set()

    def add_buffer(buf, kind):
        if id(buf) in seen:
            return
        seen.add(id(buf))
        hint, name = index.buffer_hint(buf, fdef, kind)
        line = hint[0] if hint else ((buf.span.line - 1) if buf.span is not None else info.first_line)
        info.buffers.append(BufferInfo(name, scope_name(buf.scope), [_dim(d) for d in buf.shape],
                                       str(buf.dtype), kind, line, hint))
    for p in pf.params:
        if isinstance(p, Buffer):
            add_buffer(p, "parameter" if p.name in declared else "output")
    loops = {}

    def visit(n):
        if isinstance(n, S.DeclBuffer):
            add_buffer(n.buffer, "alloc")
        elif isinstance(n, S.For) and n.kind in (S.PARALLEL, S.PIPELINED) and n.span is not None \
                and n.span.file == path:
            node = index.fors.get((n.span.line, n.span.col))
            if node is None:
                return
            depth = len(node.target.elts) if isinstance(node.target, ast.Tuple) else 1
            entry = loops.get(id(node))
            if entry is None:
                spec = n.annotations.get("pipeline")
                stages = (getattr(spec, "depth", None) or None) if n.kind == S.PIPELINED else None
                at = (node.iter.end_lineno - 1, index.pos.col(node.iter.end_lineno, node.iter.end_col_offset))
                entry = loops[id(node)] = LoopInfo(n.kind, [], stages, at)
                info.loops.append(entry)
            if len(entry.extents) < depth:
                entry.extents.append(_dim(n.extent))
    walk(pf.body, visit)
    return info


# ---------------------------------------------------------------------------------------

def analyze(text: str, path: str, time_limit: float | None = 10.0) -> Analysis:
    """Run the document `text` (saved or not) as the file `path` and describe its kernels."""
    t0 = time.perf_counter()
    an = _Analyzer(text, path)
    try:
        tree = ast.parse(text, path)
    except SyntaxError as e:
        an.add_exception(e, e.lineno or 1)
        an.result.elapsed_ms = (time.perf_counter() - t0) * 1e3
        return an.result
    lines = text.splitlines()
    comments = find_comments(text, tree)
    for c in comments:
        if c.error:
            an.add(an.pos.range(c.line, c.col, c.line, c.end_col), f"`# tilelang:` comment: {c.error}",
                   "error", "ParameterComment")
    index = _SourceIndex(tree, an.pos)
    traced = []   # (PrimFunc, params)
    try:
        with _document_module(path, text) as mod, _kernels_not_run(an.recorded), _time_limit(time_limit):
            an.run_module(tree, mod.__dict__)
            traced += [(f, {}) for f in an.recorded]
            for line, how, obj, name, node in an.kernels_of(tree, mod.__dict__):
                if how == "traced":
                    traced.append((obj, {}))
                    continue
                n = len(an.recorded)
                pf, args = an.trace_factory(obj, name, node, line, comments, lines)
                del an.recorded[n:]
                if pf is not None:
                    traced.append((pf, args))
    except AnalysisTimeout:
        pass
    finally:
        from tilelang.frontend.parser import forget_source
        forget_source(path)
    by_def = {}
    for pf, args in traced:
        if not pf.source or pf.source[0] != path:
            continue
        key = pf.source[2]
        if key in by_def and not (args and not by_def[key][1]):
            continue   # one instance per definition: the factory's own parameters win
        by_def[key] = (pf, args)
    for key in sorted(by_def):
        pf, args = by_def[key]
        info = kernel_info(pf, index, args, path)
        if info is not None:
            an.result.kernels.append(info)
            an.result.funcs.append(pf)
    an.result.elapsed_ms = (time.perf_counter() - t0) * 1e3
    return an.result
