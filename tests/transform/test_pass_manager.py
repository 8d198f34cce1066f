import os

import pytest

import tilelang
from tests.kernels import add_func


def test_lower_trace_dumps_ir_after_every_pass(tmp_path):
    d = tmp_path / "trace"
    tilelang.compile(add_func(), out_idx=[-1], target="cpu", pass_configs={"tl.lower_trace": str(d)})
    files = sorted(os.listdir(d))
    assert files[0].endswith("_input.py")
    names = [f.split("_", 1)[1] for f in files]
    for p in ("implicit_kernel.py", "lower_tile_ops.py", "pipelined_to_serial.py", "simplify.py"):
        assert p in names
    assert "@T.prim_func" in (d / files[-2]).read_text()
    assert files[-1].endswith("_cpp_source.cpp")   # the last page: what the backend prints


def test_lower_trace_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path / "t2"))
    tilelang.compile(add_func(N=77), out_idx=[-1], target="cpu")
    assert len(os.listdir(tmp_path / "t2")) >= 5


def test_pass_profile_prints_a_table(capfd, monkeypatch):
    monkeypatch.setenv("TILELANG_PASS_PROFILE", "1")
    tilelang.disable_cache()
    try:
        tilelang.compile(add_func(N=99), out_idx=[-1], target="cpu")
    finally:
        tilelang.enable_cache()
    err = capfd.readouterr().err
    assert "pass timings" in err and "lower_tile_ops" in err and "total" in err


def test_pass_profile_on_a_cache_hit_and_its_threshold(capfd, monkeypatch):
    from tilelang.transform.pass_manager import format_timings
    f = add_func(N=98)
    tilelang.compile(f, out_idx=[-1], target="cpu")
    capfd.readouterr()
    monkeypatch.setenv("TILELANG_PASS_PROFILE", "1")
    k = tilelang.compile(f, out_idx=[-1], target="cpu")
    assert k.cache_hit
    err = capfd.readouterr().err
    assert "from the kernel cache" in err and "lower_tile_ops" in err and "total" in err
    # the published threshold hides the passes faster than it
    text = format_timings([("fast", 0.0001), ("slow", 0.5)], threshold_ms=1.0)
    assert "slow" in text and "fast" not in text and "(1 passes under 1 ms not shown)" in text
    monkeypatch.setenv("TILELANG_PASS_PROFILE_THRESHOLD_MS", "100000")
    tilelang.compile(f, out_idx=[-1], target="cpu")
    err = capfd.readouterr().err
    assert "lower_tile_ops" not in err and "not shown" in err
    monkeypatch.setenv("TILELANG_PASS_PROFILE_THRESHOLD_MS", "fast")
    with pytest.raises(ValueError, match="TILELANG_PASS_PROFILE_THRESHOLD_MS"):
        tilelang.compile(f, out_idx=[-1], target="cpu")
