"""The lower trace as data: the published TL_LOWER_TRACE values, one page per pass with
its time and the user's source line of every printed statement, the backend's last page,
a directory value that still gets one file per page, and a cache hit that still traces."""
import os

import pytest

import tilelang
from tilelang.transform.lower_trace import TraceSetting, parse_setting, tracing, DEFAULT_DIR
from tests.kernels import add_func, gemm_func


def test_published_switch_values(monkeypatch):
    monkeypatch.delenv("TL_LOWER_TRACE_DIR", raising=False)
    for v in (None, "", "0", "off", "false", "no", "OFF"):
        assert parse_setting(v) is None, v
    for v in ("1", "on", "true", "yes", "html", "HTML"):
        assert parse_setting(v) == TraceSetting("html", DEFAULT_DIR), v
    assert parse_setting("terminal").mode == "terminal" and parse_setting("both").mode == "both"
    monkeypatch.setenv("TL_LOWER_TRACE_DIR", "/tmp/reports")
    assert parse_setting("both") == TraceSetting("both", "/tmp/reports")
    # any other value is a directory of one file per page, as before
    assert parse_setting("/tmp/my_trace") == TraceSetting("dir", "/tmp/my_trace")


@pytest.fixture(scope="module")
def gemm_trace():
    with tracing() as traces:
        tilelang.compile(gemm_func(bm=32, bn=32), target="cpu")
    assert len(traces) == 1
    return traces[0]


def test_a_page_per_pass_then_the_cpp(gemm_trace):
    pages = gemm_trace.pages
    assert pages[0].name == "input" and pages[0].time_s is None
    assert [p.kind for p in pages[:-1]] == ["ir"] * (len(pages) - 1)
    assert pages[-1].name == "cpp_source" and pages[-1].kind == "cpp" and "tl_entry" in pages[-1].text
    names = [p.name for p in pages]
    for p in ("lower_tile_ops", "pipelined_to_serial", "simplify"):
        assert p in names
    assert all(p.time_s is not None and p.time_s >= 0 for p in pages[1:-1])
    lowered = pages[names.index("lower_tile_ops")]
    assert "T.copy" in pages[0].text and "T.copy" not in lowered.text


def test_statements_link_back_to_the_users_lines(gemm_trace):
    import inspect
    import tests.kernels as K
    src, first = inspect.getsourcelines(K.gemm_func)
    gemm_line = first + next(i for i, line in enumerate(src) if "T.gemm(" in line)
    page = gemm_trace.pages[0]
    lines = page.text.splitlines()
    k = next(i for i, line in enumerate(lines) if "T.gemm(" in line)
    assert page.spans[k] == (K.__file__, gemm_line)
    assert gemm_trace.sources()[K.__file__].splitlines()[gemm_line - 1].strip().startswith("T.gemm(")


def test_directory_value_writes_a_file_per_page_and_a_cache_hit_still_traces(tmp_path, monkeypatch):
    f = add_func(N=333)
    tilelang.compile(f, out_idx=[-1], target="cpu")          # now in the cache
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path / "t"))
    k = tilelang.compile(f, out_idx=[-1], target="cpu")
    assert not k.cache_hit
    files = sorted(os.listdir(tmp_path / "t"))
    assert files[0] == "00_input.py" and files[-1].endswith("_cpp_source.cpp")
    assert any(name.endswith("_lower_tile_ops.py") for name in files)


def test_off_value_traces_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_LOWER_TRACE", "0")
    monkeypatch.chdir(tmp_path)
    tilelang.compile(add_func(N=334), out_idx=[-1], target="cpu")
    assert os.listdir(tmp_path) == []


def test_terminal_mode_from_the_pass_config(capsys):
    tilelang.compile(add_func(N=335), out_idx=[-1], target="cpu", pass_configs={"tl.lower_trace": "terminal"})
    out = capsys.readouterr().out
    assert "[lower_trace] add (cpu" in out and "cpp_source (cpu, " in out
    assert "unchanged: " in out and "lower_tile_ops" in out   # nothing to lower in this kernel
