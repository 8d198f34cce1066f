"""The language server end to end, through a real LSP client (pytest-lsp starts
`python -m tilelang.lsp` as a subprocess and speaks the protocol): initialize, open a
document, receive its diagnostics, request inlay hints and hover, edit (diagnostics
refresh), close; and the latency of hints after an edit of a ~100-line kernel.

One server for the whole module (it and its worker import tilelang once)."""
import os
import pathlib
import statistics
import sys
import time

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = pathlib.Path(__file__).resolve().parent / "documents"

GEMM = '''import tilelang
import tilelang.language as T


# tilelang: M=256, N=256, K=256
@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M=128, block_N=128, block_K=32, dtype="float16"):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = T.max(C_local[i, j], 0)
            T.copy(C_local, C[by * block_M, bx * block_N])
    return gemm
'''

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "tilelang.lsp", "--target", "sm_90a", "--debounce-ms", "150",
                    "--idle-ms", "600"], server_env=ENV))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), initialization_options={"target": "sm_90a"}))
    yield
    await lsp_client.shutdown_session()


def _uri(name):
    return (DOCS / name).as_uri()


def _open(client, name, text, version=1):
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=_uri(name), language_id="python", version=version, text=text)))


def _replace(client, name, text, version):
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=_uri(name), version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


async def _diagnostics_of(client, name, version):
    """Wait for the diagnostics of `name` at `version`."""
    uri = _uri(name)
    for _ in range(50):
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri and params.version == version:
            return params.diagnostics
    raise AssertionError("no diagnostics")


async def _hints(client, name, lines=200):
    return await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=_uri(name)),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=lines, character=0))))


@pytest.mark.asyncio(loop_scope="module")
async def test_open_hints_hover_edit_close(client: LanguageClient):
    _open(client, "gemm_doc.py", GEMM)
    diags = await _diagnostics_of(client, "gemm_doc.py", 1)
    assert [d for d in diags if d.severity == types.DiagnosticSeverity.Error] == []

    hints = await _hints(client, "gemm_doc.py")
    by_line = {}
    for h in hints:
        by_line.setdefault(h.position.line, []).append(h.label)
    assert by_line[10] == [": shared float16[128, 32]"]          # A_shared
    assert by_line[12] == [": fragment float32[128, 128]"]       # C_local
    assert by_line[14] == ["→ 8 iterations, 3 stages"]            # T.Pipelined(K / block_K)
    assert by_line[18] == ["→ 128 × 128"]                         # T.Parallel(block_M, block_N)
    assert "→ global float16[256, 256]" in by_line[8]             # A: T.Tensor((M, K), dtype)
    a_shared = next(h for h in hints if h.position.line == 10)
    assert GEMM.splitlines()[10][:a_shared.position.character].endswith("A_shared")

    # hover on C_local (in the T.gemm call): the register layout of the sm_90a plan
    line = GEMM.splitlines()[17]
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=_uri("gemm_doc.py")),
        position=types.Position(line=17, character=line.index("C_local") + 2)))
    text = hover.contents.value
    assert "**C_local**" in text and "fragment" in text and "MmaAccLayout<128, 128" in text
    assert "t0   r0→(0, 0) r1→(0, 1)" in text
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=_uri("gemm_doc.py")),
        position=types.Position(line=15, character=GEMM.splitlines()[15].index("A_shared") + 1)))
    assert "3 pipeline stages" in hover.contents.value

    # an edit that breaks the kernel: the diagnostics refresh at the offending call
    bad = GEMM.replace("T.copy(A[by * block_M, k * block_K], A_shared)", "T.copy(A, A_shared)")
    _replace(client, "gemm_doc.py", bad, 2)
    for _ in range(20):
        diags = await _diagnostics_of(client, "gemm_doc.py", 2)
        if any(d.severity == types.DiagnosticSeverity.Error for d in diags):
            break
    err = next(d for d in diags if d.severity == types.DiagnosticSeverity.Error)
    assert err.code == "ShapeMismatchError" and "T.copy shapes do not match" in err.message
    assert err.range.start.line == 15
    col = bad.splitlines()[15].index("T.copy")
    assert (err.range.start.character, err.range.end.character) == (col, col + len("T.copy(A, A_shared)"))

    # fixed again, then closed: the diagnostics are cleared
    _replace(client, "gemm_doc.py", GEMM, 3)
    for _ in range(20):
        diags = await _diagnostics_of(client, "gemm_doc.py", 3)
        if not any(d.severity == types.DiagnosticSeverity.Error for d in diags):
            break
    assert not any(d.severity == types.DiagnosticSeverity.Error for d in diags)
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=_uri("gemm_doc.py"))))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[_uri("gemm_doc.py")]) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_untraceable_document_gets_one_diagnostic(client: LanguageClient):
    text = "import tilelang.language as T\n\nwhile True:\n    pass\n"
    _open(client, "loop_doc.py", text.replace("while True", "import os\nos._exit(3)\nwhile True"))
    diags = await _diagnostics_of(client, "loop_doc.py", 1)
    assert len(diags) == 1 and "stopped (exit code 3)" in diags[0].message
    # the server still answers, with a fresh worker
    _open(client, "gemm_doc2.py", GEMM)
    hints = await _hints(client, "gemm_doc2.py")
    assert len(hints) == 8


@pytest.mark.asyncio(loop_scope="module")
async def test_hints_latency_after_an_edit(client: LanguageClient):
    """Hints for a ~100-line kernel (FlashAttention) within 300 ms of an edit. The time is
    the client's wall clock from didChange to the inlay hint answer (the edit's analysis
    runs at once when hints are asked for); on an idle machine it is ~60-100 ms of CPU. A
    CI machine that runs the suite with `-n auto` is loaded: TILELANG_LSP_LATENCY_SLACK
    (default 2) multiplies the bound there; the measured figures are printed."""
    text = (DOCS / "flash_attention.py").read_text()
    assert 90 <= len(text.splitlines()) <= 110
    _open(client, "flash_attention.py", text)
    await _diagnostics_of(client, "flash_attention.py", 1)
    times = []
    for v in range(2, 7):
        edited = text.replace("# tilelang: batch=1", f"# tilelang: batch={v}")
        t0 = time.perf_counter()
        _replace(client, "flash_attention.py", edited, v)
        hints = await _hints(client, "flash_attention.py")
        times.append(time.perf_counter() - t0)
        assert any(h.label == f"→ global float16[{v}, 4, 256, 64]" for h in hints)
    slack = float(os.environ.get("TILELANG_LSP_LATENCY_SLACK", "2"))
    med = statistics.median(times)
    print(f"inlay hints after an edit: median {med * 1e3:.0f} ms, all {[round(t * 1e3) for t in times]} ms")
    assert med < 0.3 * slack, f"median {med * 1e3:.0f} ms"
