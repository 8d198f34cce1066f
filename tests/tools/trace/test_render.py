"""The trace's renderers: the terminal diff, the HTML page's data, the CUDA pages."""
import json
import re

import pytest

import tilelang
from tilelang.tools.trace import finish
from tilelang.tools.trace.html import render_html, trace_data
from tilelang.tools.trace.terminal import format_trace
from tilelang.transform.lower_trace import tracing
from tests.kernels import gemm_func


@pytest.fixture(scope="module")
def trace():
    with tracing() as traces:
        tilelang.compile(gemm_func(bm=32, bn=32, K=32), target="cpu")
    return traces[0]


def test_terminal_shows_a_diff_for_each_pass_that_changed_something(trace):
    text = format_trace(trace)
    heads = re.findall(r"^\d\d (\w+) \([\d.]+ ms\) \+(\d+) -(\d+)$", text, re.M)
    names = [h[0] for h in heads]
    assert "lower_tile_ops" in names
    assert all(int(a) + int(d) > 0 for _, a, d in heads)
    # the pass that lowered the copies: the copy is a removed line, its loop an added one
    assert re.search(r"^-\s+T\.copy\(A\[", text, re.M) and re.search(r"^\+\s+for .* in T\.Parallel", text, re.M)
    assert "unchanged: " in text and "cpp_source" in text
    coloured = format_trace(trace, colour=True)
    assert "\033[32m+" in coloured and "\033[31m-" in coloured


def test_html_is_one_offline_file_with_every_page_and_its_diff(trace):
    page = render_html(trace)
    assert "<script src" not in page and "<link" not in page and "http" not in page.split("<script type")[0]
    data = json.loads(re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page, re.S)
                      .group(1).replace("<\\/", "</"))
    assert data == json.loads(json.dumps(trace_data(trace)))
    pages = data["pages"]
    assert [p["name"] for p in pages] == [p.name for p in trace.pages]
    k = [p["name"] for p in pages].index("lower_tile_ops")
    assert pages[k]["prev"] == k - 1 and pages[k]["added"] > 0 and pages[k]["deleted"] > 0
    assert pages[-1]["kind"] == "cpp" and pages[-1]["prev"] is None
    assert data["sources"] and data["sources"][0][0].endswith("kernels.py")


def test_html_and_terminal_modes_from_the_environment(trace, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TL_LOWER_TRACE", "both")
    monkeypatch.setenv("TL_LOWER_TRACE_DIR", str(tmp_path))
    monkeypatch.setenv("NO_COLOR", "1")
    from tilelang.transform.lower_trace import LowerTrace, current_setting
    t = LowerTrace("gemm", "cpu", current_setting(), trace.pages)

    class Ctx:
        pass
    ctx = Ctx()
    ctx.trace = t
    path = finish(ctx)
    out, err = capsys.readouterr()
    assert "lower_tile_ops" in out and path.startswith(str(tmp_path)) and path.endswith("gemm.html")
    assert "HTML report" in err and open(path).read().startswith("<!DOCTYPE html>")
    assert finish(ctx) is None   # once per compile


@pytest.mark.skipif(not __import__("tilelang.backend.cuda.host.nvrtc", fromlist=["x"]).nvrtc_available(),
                    reason="NVRTC not installed")
def test_cuda_trace_ends_with_the_plan_source_ptx_and_sass():
    with tracing() as traces:
        tilelang.compile(gemm_func(bm=64, bn=64, K=64), target="cuda -arch=sm_90a")
    pages = traces[0].pages
    kinds = [p.kind for p in pages]
    assert kinds[-4:] == ["plan", "cuda", "ptx", "sass"], kinds
    assert "__global__" in pages[-3].text and ".entry" in pages[-2].text
    from tilelang.backend.cuda.host.nvrtc import cuobjdump_path
    if cuobjdump_path() is not None:
        assert "HGMMA" in pages[-1].text or "HMMA" in pages[-1].text
