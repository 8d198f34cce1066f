"""The language server (pygls): maps the worker's analysis of each open document to LSP
inlay hints, hover and diagnostics.

Timing: an edit schedules the analysis after a short debounce and publishes its
diagnostics; a request for hints or hover that finds the analysis out of date runs it at
once (no debounce: the client is waiting). Lowering for the target (the errors only
lowering finds, and the layouts hover shows) runs when the user pauses (`idle`), or when a
hover needs it."""
from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from tilelang.lsp.analysis import Analysis
from tilelang.lsp.layouts import DEFAULT_ARCH, Lowered, parse_target_name
from tilelang.lsp.worker import Worker, WorkerError

log = logging.getLogger("tilelang.lsp")

_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
             "information": types.DiagnosticSeverity.Information}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Options:
    target: str = DEFAULT_ARCH    # 'cpu' or an arch: where hover's layouts come from
    debounce: float = 0.2         # s after an edit before diagnostics are refreshed
    idle: float = 0.75            # s without edits before lowering for the target
    time_limit: float = 10.0      # s a document's code may run


@dataclass
class _Doc:
    analysis: Analysis | None = None
    analysis_version: object = None
    lowered: Lowered | None = None
    lowered_version: object = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    task: asyncio.Task | None = None
    worker_diagnostics: list = field(default_factory=list)   # a worker failure, as diagnostics


class TileLangLanguageServer(LanguageServer):
    def __init__(self, options: Options | None = None):
        from tilelang.version import __version__ as version
        super().__init__("tilelang-lsp", str(version))
        self.options = options or Options()
        self.worker = Worker(self.options.time_limit)
        self.docs: dict[str, _Doc] = {}

    # ------------------------------------------------------------------ analysis runs
    def _doc(self, uri) -> _Doc:
        d = self.docs.get(uri)
        if d is None:
            d = self.docs[uri] = _Doc()
        return d

    async def analysis(self, uri) -> Analysis | None:
        """The analysis of the document's current text (run now if out of date)."""
        text_doc = self.workspace.get_text_document(uri)
        st = self._doc(uri)
        async with st.lock:
            version = (text_doc.version, text_doc.source)
            if st.analysis_version == version:
                return st.analysis
            try:
                res = await asyncio.to_thread(self.worker.request, "analyze", path=text_doc.path,
                                              text=text_doc.source)
                st.analysis, st.worker_diagnostics = Analysis.from_dict(res), []
            except WorkerError as e:
                st.analysis, st.worker_diagnostics = Analysis(text_doc.path), [_worker_failure(e)]
            st.analysis_version = version
            return st.analysis

    async def lowered(self, uri) -> Lowered | None:
        """The kernels lowered for the target, for the document's current text."""
        an = await self.analysis(uri)
        text_doc = self.workspace.get_text_document(uri)
        st = self._doc(uri)
        async with st.lock:
            if st.analysis is not an or st.analysis_version != (text_doc.version, text_doc.source):
                return None   # edited meanwhile: the next pause lowers again
            if st.lowered_version == st.analysis_version:
                return st.lowered
            try:
                res = await asyncio.to_thread(self.worker.request, "lower", path=text_doc.path,
                                              target=self.options.target)
                st.lowered = Lowered.from_dict(res)
            except WorkerError as e:
                st.lowered = Lowered(self.options.target, [_worker_failure(e)], [])
            st.lowered_version = st.analysis_version
            return st.lowered

    def schedule(self, uri, delay):
        st = self._doc(uri)
        if st.task is not None:
            st.task.cancel()
        st.task = asyncio.get_running_loop().create_task(self._refresh(uri, delay))

    async def _refresh(self, uri, delay):
        try:
            await asyncio.sleep(delay)
            await self.analysis(uri)
            self.publish(uri)
            await asyncio.sleep(max(0.0, self.options.idle - delay))
            if await self.lowered(uri) is not None:
                self.publish(uri)
        except asyncio.CancelledError:
            pass
        except Exception:  # noqa: BLE001 - the server keeps serving; the log says why
            log.exception("tilelang-lsp: refreshing %s failed", uri)

    def publish(self, uri):
        st = self.docs.get(uri)
        if st is None:
            return
        diags = list(st.worker_diagnostics) + (st.analysis.diagnostics if st.analysis else [])
        if st.lowered is not None and st.lowered_version == st.analysis_version:
            diags += st.lowered.diagnostics
        version = st.analysis_version[0] if st.analysis_version else None
        doc = self.workspace.get_text_document(uri)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=[_diagnostic(doc, d) for d in diags], version=version))

    def close(self, uri):
        st = self.docs.pop(uri, None)
        if st is not None and st.task is not None:
            st.task.cancel()
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if self.worker.proc is not None:   # the worker drops the document's traced kernels
            path = self.workspace.get_text_document(uri).path
            asyncio.get_running_loop().create_task(self._forget(path))

    async def _forget(self, path):
        try:
            await asyncio.to_thread(self.worker.request, "forget", path=path)
        except WorkerError:
            pass


def _worker_failure(e):
    from tilelang.lsp.analysis import Diagnostic, Range
    return Diagnostic(Range(0, 0, 0, 0), f"tilelang: {e}", "error", "WorkerError")


def _position(doc, line, col):
    """A character column of the analysis in the client's position encoding."""
    return doc.position_codec.position_to_client_units(doc.lines, types.Position(line=line, character=col))


def _diagnostic(doc, d):
    r = d.range
    return types.Diagnostic(range=types.Range(start=_position(doc, r.line, r.col),
                                              end=_position(doc, r.end_line, r.end_col)),
                            message=d.message, severity=_SEVERITY.get(d.severity), source="tilelang",
                            code=d.code or None)


def inlay_hints(doc, an: Analysis, start_line: int, end_line: int) -> list[types.InlayHint]:
    out = []
    for k in an.kernels:
        traced = ", ".join(f"{n}={v}" for n, v in k.params.items())
        for b in k.buffers:
            if b.hint_at and start_line <= b.hint_at[0] <= end_line:
                label = (f"→ {b.label()}" if b.kind == "parameter" else f": {b.label()}")
                out.append(types.InlayHint(position=_position(doc, *b.hint_at),
                                           label=label, kind=types.InlayHintKind.Type, padding_left=True,
                                           tooltip=f"kernel `{k.name}`" + (f" traced with {traced}" if traced else "")))
        for lp in k.loops:
            if start_line <= lp.hint_at[0] <= end_line:
                out.append(types.InlayHint(position=_position(doc, *lp.hint_at),
                                           label=f"→ {lp.label()}", kind=types.InlayHintKind.Type,
                                           padding_left=True))
    out.sort(key=lambda h: (h.position.line, h.position.character))
    seen, unique = set(), []
    for h in out:   # a macro's buffer or loop, traced once per call: one hint
        key = (h.position.line, h.position.character, h.label)
        if key not in seen:
            seen.add(key)
            unique.append(h)
    return unique


def word_at(text: str, line: int, character: int) -> str | None:
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return None
    for m in _WORD.finditer(lines[line]):
        if m.start() <= character <= m.end():
            return m.group(0)
    return None


def hover_text(an: Analysis, lowered: Lowered | None, line: int, word: str) -> str | None:
    k = an.kernel_at(line)
    if k is None:
        return None
    b = k.buffer(word)
    if b is None:
        return None
    traced = ", ".join(f"{n}={v}" for n, v in k.params.items())
    where = {"parameter": "parameter", "output": "output (T.empty)", "alloc": "allocated"}[b.kind]
    parts = [f"**{b.name}**: `{b.scope}` buffer, dtype `{b.dtype}`, shape `({', '.join(b.shape)})`",
             f"{where} on line {b.line + 1} of kernel `{k.name}`" + (f", traced with {traced}" if traced else "")]
    if lowered is not None:
        idx = an.kernels.index(k)
        text = lowered.layouts[idx].get(b.name) if idx < len(lowered.layouts) else None
        if text:
            parts.append(text)
        elif parse_target_name(lowered.target)[0] == "cpu" and b.scope in ("fragment", "shared"):
            parts.append("On the CPU target: a plain array of the block (one thread per block).")
    return "\n\n".join(parts)


def make_server(options: Options | None = None) -> TileLangLanguageServer:
    server = TileLangLanguageServer(options)

    @server.feature(types.INITIALIZE)
    def initialize(ls: TileLangLanguageServer, params: types.InitializeParams):
        opts = params.initialization_options or {}
        if isinstance(opts, dict) and opts.get("target"):
            try:
                parse_target_name(str(opts["target"]))
                ls.options.target = str(opts["target"])
            except ValueError as e:   # keep the command line's target; the client's log says why
                log.warning("tilelang-lsp: initializationOptions.target ignored: %s", e)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: TileLangLanguageServer, params):
        # the worker imports tilelang (seconds): start it while the client opens files
        await asyncio.to_thread(ls.worker.start)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TileLangLanguageServer, params: types.DidOpenTextDocumentParams):
        ls.schedule(params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TileLangLanguageServer, params: types.DidChangeTextDocumentParams):
        ls.schedule(params.text_document.uri, ls.options.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TileLangLanguageServer, params: types.DidCloseTextDocumentParams):
        ls.close(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    async def inlay_hint(ls: TileLangLanguageServer, params: types.InlayHintParams):
        an = await ls.analysis(params.text_document.uri)
        if an is None:
            return []
        return inlay_hints(ls.workspace.get_text_document(params.text_document.uri), an,
                           params.range.start.line, params.range.end.line)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: TileLangLanguageServer, params: types.HoverParams):
        uri = params.text_document.uri
        an = await ls.analysis(uri)
        doc = ls.workspace.get_text_document(uri)
        pos = doc.position_codec.position_from_client_units(doc.lines, params.position)
        word = word_at(doc.source, pos.line, pos.character)
        if an is None or word is None or an.kernel_at(pos.line) is None:
            return None
        lowered = await ls.lowered(uri)
        text = hover_text(an, lowered, pos.line, word)
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))

    return server
