"""The process that runs documents: answers over its pipes whatever the document prints or
reads, is stopped and replaced when a document runs past the time limit."""
import pytest

from tilelang.lsp.analysis import Analysis
from tilelang.lsp.layouts import Lowered
from tilelang.lsp.worker import Worker, WorkerError
from tests.lsp.test_analysis import GEMM, PATH


@pytest.fixture(scope="module")
def worker():
    w = Worker(time_limit=1.0, grace=5.0)
    yield w
    w.stop()


def test_analyze_and_lower_in_the_worker(worker):
    noisy = GEMM.replace("import tilelang\n", "import tilelang\nprint('x' * 100000)\nimport sys\n"
                                              "sys.stdin.read()\n", 1)
    an = Analysis.from_dict(worker.request("analyze", path=PATH, text=noisy))
    assert an.diagnostics == [] and [k.name for k in an.kernels] == ["gemm"]
    assert an.kernels[0].buffer("C_local").label() == "fragment float32[128, 128]"
    lo = Lowered.from_dict(worker.request("lower", path=PATH, target="sm_80"))
    assert "MmaAccLayout" in lo.layouts[0]["C_local"]


def test_time_limit_then_a_fresh_process(worker):
    an = Analysis.from_dict(worker.request("analyze", path=PATH, text="x = 0\nwhile True:\n    x += 1\n"))
    [d] = an.diagnostics
    assert d.code == "AnalysisTimeout" and d.range.line in (1, 2)
    assert worker.proc is None            # interrupted: not reused
    an = Analysis.from_dict(worker.request("analyze", path=PATH, text=GEMM))
    assert [k.name for k in an.kernels] == ["gemm"]


def test_unknown_request_is_an_error(worker):
    with pytest.raises(WorkerError, match="unknown op"):
        worker.request("compile", path=PATH)
