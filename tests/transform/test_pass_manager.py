import os

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
    assert "@T.prim_func" in (d / files[-1]).read_text()


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
