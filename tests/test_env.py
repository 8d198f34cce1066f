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


def test_settings_read_as_attributes_of_the_module(monkeypatch, tmp_path):
    """The published minference example reads `tilelang.env.TILELANG_CACHE_DIR` (there the
    package root re-exports the settings object over the module)."""
    import tilelang
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILELANG_EXECUTION_BACKEND", "cython")
    assert tilelang.env.TILELANG_CACHE_DIR == str(tmp_path)
    assert tilelang.env.TILELANG_TMP_DIR == str(tmp_path / "tmp")
    assert tilelang.env.env.TILELANG_DEFAULT_EXECUTION_BACKEND == "cython"
    try:
        tilelang.env.TILELANG_NO_SUCH_SETTING
    except AttributeError as e:
        assert "TILELANG_NO_SUCH_SETTING" in str(e) and "TILELANG_CACHE_DIR" in str(e)
    else:
        raise AssertionError("an unknown setting must raise AttributeError")
