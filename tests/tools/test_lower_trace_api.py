"""The published `tilelang.tools.lower_trace` API: a pass chain applied to a function,
`enable()` / `disable()`."""
import os

import pytest

import tilelang
from tilelang.tools.lower_trace import disable, enable, lower_trace
from tilelang.transform.lower_tile_ops import lower_tile_ops
from tilelang.transform.simplify import simplify
from tests.kernels import add_func, gemm_func


def test_a_pass_chain_shows_what_each_pass_changed(tmp_path, capsys):
    html = tmp_path / "r.html"
    res = lower_trace(gemm_func(bm=32, bn=32, K=32), [("lower", lower_tile_ops), simplify], mode="both",
                      html_path=str(html))
    assert [r["name"] for r in res] == ["lower", "simplify"]
    assert res[0]["changed"] and res[0]["add_lines"] > 0 and res[0]["time_ms"] >= 0
    assert "T.Parallel" in capsys.readouterr().out and html.read_text().startswith("<!DOCTYPE html>")
    with pytest.raises(ValueError, match="mode"):
        lower_trace(add_func(), simplify, mode="pdf")


def test_enable_traces_later_compiles(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.argv", ["my_script.py"])
    enable("html", str(tmp_path))
    try:
        tilelang.compile(add_func(N=336), out_idx=[-1], target="cpu")
    finally:
        disable()
    assert os.listdir(tmp_path / "my_script") == ["add.html"]
    with pytest.raises(ValueError, match="mode"):
        enable("off")
