import time
import uuid
"""The autotuner on the CPU backend: small GEMMs, a handful of configs each."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import tilelang
from tilelang.autotuner import AutoTuner, set_autotune_inputs
from tilelang.autotuner.space import expand_configs
from tilelang.jit import cache
from tests.autotuner.gemm_factories import gemm_factory, gemm_ref

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
M = N = 128
K = 64


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "2")   # exercise the worker pool even on 1-2 CPUs
    monkeypatch.setenv("TILELANG_AUTO_TUNING_PROGRESS", "0")
    monkeypatch.delenv("TILELANG_REMOTE_CACHE", raising=False)
    cache.clear_cache()
    AutoTuner._memory_cache.clear()
    yield tmp_path
    cache.clear_cache()


def _decorated(configs, **kw):
    kw.setdefault("ref_prog", gemm_ref)
    return tilelang.autotune(configs=configs, warmup=2, rep=5, timeout=60, **kw)(
        tilelang.jit(out_idx=[-1], target="cpu")(gemm_factory))


def _check_kernel(kernel):
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    torch.testing.assert_close(kernel(a, b), gemm_ref(a, b), atol=1e-2, rtol=1e-2)


def test_expand_configs():
    assert expand_configs({"a": [1, 2], "b": [3]}) == [{"a": 1, "b": 3}, {"a": 2, "b": 3}]
    assert expand_configs([{"a": 1}]) == [{"a": 1}]
    assert expand_configs(lambda n: {"a": [n, 2 * n]}, (4,)) == [{"a": 4}, {"a": 8}]
    with pytest.raises(TypeError):
        expand_configs([1, 2])


def test_decorator_tunes_gemm():
    matmul = _decorated({"bm": [32, 64], "bn": [64, 128]})
    kernel = matmul(M, N, K)
    assert isinstance(kernel, tilelang.JITKernel)
    res = matmul.last_result
    assert len(res.records) == 4 and all(r.status == "ok" for r in res.records), res.table_str()
    assert res.latency == min(r.latency for r in res.records)
    assert kernel.config == res.config and kernel.latency == res.latency
    assert res.ref_latency is not None and res.ref_latency > 0
    assert not res.from_cache
    _check_kernel(kernel)
    assert matmul(M, N, K) is kernel  # tuned once per problem in this process
    assert "ok *" in res.table_str()


def test_programmatic_api():
    tuner = AutoTuner.from_kernel(lambda bm=64, bn=64: gemm_factory(M, N, K, bm=bm, bn=bn),
                                  configs=[{"bm": 64, "bn": 64}, {"bm": 32, "bn": 128}])
    res = (tuner.set_compile_args(out_idx=[-1], target="cpu")
           .set_profile_args(ref_prog=gemm_ref, warmup=2, rep=5)
           .run(warmup=2, rep=5))
    assert res.config in ({"bm": 64, "bn": 64}, {"bm": 32, "bn": 128})
    assert res.latency > 0 and len(res.table) == 2
    _check_kernel(res.kernel)


def test_configs_callable_and_explicit_tunables():
    matmul = _decorated(lambda M, N, K: [{"bm": 64, "bn": b} for b in (64, 128) if b <= N])
    kernel = matmul(M, N, K)
    assert kernel.config["bm"] == 64
    direct = matmul(M, N, K, bm=32, bn=32)  # tunables given: no tuning, that config
    assert not hasattr(direct, "config") or direct is not kernel
    assert matmul.last_result.kernel is kernel
    _check_kernel(direct)


def test_failing_config_is_recorded_and_skipped():
    matmul = _decorated([{"bm": 64, "bad_shape": True}, {"bm": 64}, {"bm": 32, "bad_shape": True}])
    kernel = matmul(M, N, K)
    res = matmul.last_result
    status = {r.index: r.status for r in res.records}
    assert status == {0: "compile_error", 1: "ok", 2: "compile_error"}
    assert "ShapeMismatchError" in res.records[0].error
    assert res.config == {"bm": 64}
    _check_kernel(kernel)


def test_wrong_config_is_rejected_by_the_check():
    # skipping the last K tile is faster, but wrong: it must never win
    matmul = _decorated([{"bm": 64, "bn": 64, "skip_last_k": True}, {"bm": 64, "bn": 64},
                         {"bm": 64, "bn": 128, "skip_last_k": True}])
    kernel = matmul(M, N, K)
    res = matmul.last_result
    assert [r.status for r in res.records] == ["wrong", "ok", "wrong"]
    assert "differ" in res.records[0].error
    assert res.config == {"bm": 64, "bn": 64}
    _check_kernel(kernel)


def test_skip_check_lets_any_config_win():
    matmul = _decorated([{"skip_last_k": True}], skip_check=True)
    matmul(M, N, K)
    assert matmul.last_result.records[0].status == "ok"


def test_all_configs_failing_raises_with_the_table():
    tuner = AutoTuner.from_kernel(lambda bm=64: gemm_factory(M, N, K, bm=bm), configs={"bm": [32, 64]})
    tuner.set_compile_args(out_idx=[-1], target="cpu", compile_flags=["-fno-such-flag-tilelang"])
    with pytest.raises(RuntimeError, match="no valid configuration") as e:
        tuner.set_profile_args(ref_prog=gemm_ref, warmup=1, rep=2).run()
    assert "compile_error" in str(e.value)


def test_compile_timeout_is_recorded(monkeypatch):
    # a compile that outlives its deadline (compiled in this process, so the patch applies)
    from tilelang.autotuner import compile_pool

    def slow_compile(prim_func, kwargs):
        time.sleep(5)
        raise AssertionError("the timeout did not interrupt the compile")
    monkeypatch.setenv("TILELANG_AUTO_TUNING_MAX_CPU_COUNT", "1")
    monkeypatch.setattr(compile_pool, "compile_one", slow_compile)
    tuner = AutoTuner.from_kernel(lambda bm=64: gemm_factory(M, N, K, bm=bm), configs={"bm": [32, 64]})
    tuner.set_compile_args(out_idx=[-1], target="cpu")
    with pytest.raises(RuntimeError, match="compile_timeout"):
        tuner.set_profile_args(ref_prog=gemm_ref, timeout=0.2).run()

def test_set_autotune_inputs():
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    seen = []

    def ref(A, B):
        seen.append(A.data_ptr())
        return gemm_ref(A, B)
    matmul = _decorated({"bm": [32, 64]}, ref_prog=ref)
    with set_autotune_inputs(a, b):
        matmul(M, N, K)
    assert seen and set(seen) == {a.data_ptr()}


def test_in_process_compile_when_one_worker(monkeypatch):
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "1")
    matmul = _decorated({"bm": [32, 64]})
    matmul(M, N, K)
    assert [r.status for r in matmul.last_result.records] == ["ok", "ok"]


SCRIPT = textwrap.dedent("""
    import sys, tilelang
    from tests.autotuner.gemm_factories import gemm_factory, gemm_ref
    matmul = tilelang.autotune(configs={"bm": [32, 64], "bn": [64]}, warmup=2, rep=5, ref_prog=gemm_ref)(
        tilelang.jit(out_idx=[-1], target="cpu")(gemm_factory))
    k = matmul(128, 128, 64)
    r = matmul.last_result
    print("RESULT", r.from_cache, r.config["bm"], r.config["bn"], len(r.records))
""")


def run_script(cache_dir, **env):
    e = dict(os.environ, PYTHONPATH=ROOT, TILELANG_CACHE_DIR=str(cache_dir), TILELANG_AUTO_TUNING_PROGRESS="0")
    e.update(env)
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=e, cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return line.split()[1:]


def test_best_config_is_reused_across_processes(fresh):
    first = run_script(fresh / "shared")
    assert first[0] == "False" and first[3] == "2"
    second = run_script(fresh / "shared")
    assert second == ["True"] + first[1:]
    third = run_script(fresh / "shared", TILELANG_AUTO_TUNING_DISABLE_CACHE="1")
    assert third[0] == "False"


@pytest.mark.gpu
def test_tune_gemm_on_every_gpu():
    """On CUDA: candidates are spread over all visible GPUs (one benchmark worker per
    device) and the best kernel runs on the caller's device."""
    n_dev = torch.cuda.device_count()
    matmul = tilelang.autotune(configs={"bm": [64, 128], "bn": [64, 128], "bk": [32]}, warmup=5, rep=20,
                               ref_prog=gemm_ref)(tilelang.jit(out_idx=[-1], target="cuda")(gemm_factory))
    kernel = matmul(1024, 1024, 512)
    res = matmul.last_result
    assert all(r.status == "ok" for r in res.records), res.table_str()
    assert {r.device for r in res.records} <= set(range(n_dev))
    if n_dev > 1:
        assert len({r.device for r in res.records}) > 1
    a = torch.randn(1024, 512, dtype=torch.float16, device="cuda")
    b = torch.randn(512, 1024, dtype=torch.float16, device="cuda")
    torch.testing.assert_close(kernel(a, b), gemm_ref(a, b), atol=1e-2, rtol=1e-2)
