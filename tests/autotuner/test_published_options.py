"""The published autotune options: early_stop / early_stop_factor, do_not_specialize,
AutoTuner.run's benchmark device selection, AutoTuner.cache_dir / generate_cache_key
(CPU backend)."""
import pytest

import tilelang
from tilelang.autotuner import AutoTuner
from tilelang.jit import cache
from tilelang.profiler import Profiler
from tests.autotuner.gemm_factories import gemm_factory, gemm_ref

M = N = 128
K = 64


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "1")
    monkeypatch.setenv("TILELANG_AUTO_TUNING_PROGRESS", "0")
    monkeypatch.delenv("TILELANG_REMOTE_CACHE", raising=False)
    cache.clear_cache()
    AutoTuner._memory_cache.clear()
    yield tmp_path
    cache.clear_cache()


def _decorated(configs, **kw):
    return tilelang.autotune(configs=configs, warmup=1, rep=2, timeout=60, ref_prog=gemm_ref, **kw)(
        tilelang.jit(out_idx=[-1], target="cpu")(gemm_factory))


def test_early_stop_gives_later_configs_the_best_times_the_factor(monkeypatch):
    seen, times = [], iter([1.0, 5.0, 0.5])

    def fake_bench(self, func=None, *a, early_stop_baseline=None, **k):
        if func is not None:      # the reference's own timing
            return 1.0
        seen.append(early_stop_baseline)
        return next(times)
    monkeypatch.setattr(Profiler, "do_bench", fake_bench)
    matmul = _decorated([{"bm": 64}, {"bm": 32}, {"bn": 32}], early_stop=True, early_stop_factor=3.0)
    matmul(M, N, K)
    # the first has nothing to beat; the second may stop at 3 x 1.0; its 5.0 does not lower the bar
    assert seen == [None, 3.0, 3.0]
    assert matmul.last_result.config == {"bn": 32}


def test_without_early_stop_every_config_is_timed_in_full(monkeypatch):
    seen = []
    monkeypatch.setattr(Profiler, "do_bench",
                        lambda self, func=None, *a, early_stop_baseline=None, **k: seen.append(early_stop_baseline) or 1.0)
    _decorated([{"bm": 64}, {"bm": 32}])(M, N, K)
    assert set(seen) == {None}


def test_early_stop_factor_below_one_is_refused():
    with pytest.raises(ValueError, match="early_stop_factor must be >= 1.0"):
        _decorated([{"bm": 64}], early_stop=True, early_stop_factor=0.5)


def test_do_not_specialize_reuses_the_result():
    matmul = _decorated([{"bm": 64}, {"bm": 32}], do_not_specialize=["K"])
    first = matmul.tune(M, N, K)
    assert matmul.tune(M, N, K=K) is first      # keyword or positional: the same problem
    assert matmul.tune(M, N, 2 * K) is first    # K does not start a new tuning
    assert matmul.tune(M, 2 * N, K) is not first


def test_do_not_specialize_names_must_be_parameters():
    with pytest.raises(ValueError, match=r"do_not_specialize names \['KK'\]"):
        _decorated([{"bm": 64}], do_not_specialize=("KK",))


def test_cache_dir_and_key(fresh):
    tuner = AutoTuner.from_kernel(lambda bm=64: gemm_factory(M, N, K, bm=bm), configs=[{"bm": 64}, {"bm": 32}])
    tuner.set_compile_args(out_idx=[-1], target="cpu")
    assert tuner.cache_dir.name == "autotuner" and str(fresh) in str(tuner.cache_dir)
    key = tuner.generate_cache_key()
    assert isinstance(key, str) and key == tuner.generate_cache_key()
    assert tuner.generate_cache_key({"x": 1}, {}) != key


def test_run_refuses_a_bad_early_stop_factor():
    tuner = AutoTuner.from_kernel(lambda bm=64: gemm_factory(M, N, K, bm=bm), configs=[{"bm": 64}])
    with pytest.raises(ValueError, match="early_stop_factor"):
        tuner.set_compile_args(out_idx=[-1], target="cpu").run(early_stop=True, early_stop_factor=0.9)


def _tuner(configs):
    t = AutoTuner.from_kernel(lambda bm=64, bn=64: gemm_factory(M, N, K, bm=bm, bn=bn), configs=configs)
    return t.set_compile_args(out_idx=[-1], target="cpu").set_profile_args(ref_prog=gemm_ref, warmup=1, rep=2)


def test_use_pipeline_times_each_config_as_it_compiles(monkeypatch):
    from tilelang.autotuner.benchmark import Bencher
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "2")   # through the worker pool
    monkeypatch.setattr(Bencher, "run", lambda *a, **k: pytest.fail("the batch timing ran"))
    timed = []
    real = Bencher.run_one
    monkeypatch.setattr(Bencher, "run_one", lambda self, c, dev, kernel=None: (timed.append(dev),
                                                                               real(self, c, dev, kernel))[1])
    res = _tuner([{"bm": 64}, {"bm": 32}, {"bn": 32}]).run(use_pipeline=True)
    assert timed == ["cpu"] * 3 and all(r.status == "ok" for r in res.records), res.table_str()


def test_grouped_compile_compiles_every_config(monkeypatch):
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "2")
    res = _tuner([{"bm": 64}, {"bm": 32}, {"bn": 32, "bm": 32}]).run(enable_grouped_compile=True,
                                                                      group_compile_size=2)
    assert [r.status for r in res.records] == ["ok"] * 3, res.table_str()
    with pytest.raises(ValueError, match="group_compile_size"):
        _tuner([{"bm": 64}]).run(enable_grouped_compile=True, group_compile_size=0)
