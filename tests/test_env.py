"""`from tilelang.env import env`: the published settings object's attributes that scripts read
(the published puzzles' environment check prints `env.CUDA_HOME`)."""
import importlib

import tilelang.env


def test_env_object_reports_cuda_home_and_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_HOME", "/opt/my-cuda")
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    mod = importlib.reload(tilelang.env)
    try:
        assert mod.env.CUDA_HOME == "/opt/my-cuda" == mod.CUDA_HOME
        assert mod.env.TILELANG_CACHE_DIR == str(tmp_path)
    finally:
        monkeypatch.undo()
        importlib.reload(tilelang.env)
