"""Search strategies through `AutoTuner.run` / `@tilelang.autotune` on the CPU backend:
only the configs a strategy picks are compiled, each fidelity is timed once, the
result says how it was searched."""
import math

import pytest

import tilelang
from tilelang.autotuner import AutoTuner
from tilelang.autotuner.benchmark import Bencher
from tilelang.autotuner.compile_pool import compile_candidates as real_compile_candidates
from tilelang.autotuner import executor as executor_mod
from tilelang.jit import cache
from tests.autotuner.gemm_factories import gemm_factory, gemm_ref

M = N = 128
K = 64
CONFIGS = {"bm": [16, 32, 64], "bn": [16, 32, 64], "bk": [16, 32]}   # 18 configs


def landscape(c):
    return 1.0 + abs(math.log2(c["bm"]) - 5) + 0.5 * abs(math.log2(c["bn"]) - 6) + (0.1 if c["bk"] == 16 else 0)


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


@pytest.fixture
def fake_timing(monkeypatch):
    """Real compiles; timings from `landscape` (CPU timings of tiny GEMMs are noise).
    Records (index, warmup, rep) per timing and the indices compiled."""
    log = {"timed": [], "compiled": []}

    def run_one(self, cand, device_key, kernel=None):
        rec = cand.record
        log["timed"].append((rec.index, self.warmup, self.rep))
        rec.status, rec.latency, rec.device = "ok", landscape(rec.config), device_key

    def compile_candidates(items, *a, **k):
        log["compiled"].extend(i for i, _, _ in items)
        return real_compile_candidates(items, *a, **k)
    monkeypatch.setattr(Bencher, "run_one", run_one)
    monkeypatch.setattr(executor_mod, "compile_candidates", compile_candidates)
    return log


def _tuner():
    t = AutoTuner.from_kernel(gemm_factory, CONFIGS).set_kernel_parameters((M, N, K))
    t.set_compile_args(out_idx=[-1], target="cpu")
    return t.set_profile_args(warmup=3, rep=9, ref_prog=gemm_ref, skip_check=True)


def test_random_compiles_and_times_only_its_budget(fake_timing):
    res = _tuner().run(strategy="random", budget=6, seed=1)
    timed = [i for i, _, _ in fake_timing["timed"]]
    assert len(timed) == len(set(timed)) == 6 and sorted(fake_timing["compiled"]) == sorted(timed)
    assert res.search == dict(strategy="random", budget=6, evaluations=6, benchmark_cost=6.0, configs_evaluated=6,
                              timed_iterations=6 * 12)
    assert res.config == min((res.records[i].config for i in timed), key=landscape)
    assert sum(r.status == "pending" for r in res.records) == 18 - 6


def test_halving_compiles_each_config_once_and_retimes_survivors_longer(fake_timing):
    res = _tuner().run(strategy="halving", seed=0)          # rungs 18, 6, 2 at rep 1, 3, 9
    assert sorted(fake_timing["compiled"]) == list(range(18))
    reps = [r for _, _, r in fake_timing["timed"]]
    assert (reps.count(1), reps.count(3), reps.count(9)) == (18, 6, 2)
    assert len(set(fake_timing["timed"])) == len(fake_timing["timed"])
    assert res.config == dict(bm=32, bn=64, bk=32) and res.latency == landscape(res.config)
    best = next(r for r in res.records if r.config == res.config)
    assert (best.warmup, best.rep) == (3, 9)
    assert res.search["evaluations"] == 26 and res.search["configs_evaluated"] == 18


def test_model_strategy_through_the_decorator(fake_timing):
    matmul = tilelang.autotune(configs=CONFIGS, warmup=3, rep=9, ref_prog=gemm_ref, skip_check=True,
                               strategy="model", budget=12, seed=0)(
        tilelang.jit(out_idx=[-1], target="cpu")(gemm_factory))
    kernel = matmul(M, N, K)
    assert matmul.last_result.config == dict(bm=32, bn=64, bk=32)
    assert kernel.config == matmul.last_result.config
    timed = fake_timing["timed"]
    assert len(timed) == len(set(timed))                     # no config timed twice at one length
    assert sorted(i for i, _, r in timed if r == 1) == list(range(18))   # the screen: a tenth of (3, 9)
    full = [i for i, _, r in timed if r == 9]
    assert 3 <= len(full) <= 12 - 3
    assert matmul.last_result.search["benchmark_cost"] == pytest.approx(18 * 2 / 12 + len(full))


def test_the_tuning_cache_keeps_strategies_apart(fake_timing):
    a = _tuner().run(strategy="random", budget=3, seed=0)
    b = _tuner().run(strategy="random", budget=3, seed=0)
    assert b is a                                            # same search: from the cache
    c = _tuner().run(strategy="random", budget=3, seed=1)   # another search: tuned anew
    assert c is not a and len(fake_timing["timed"]) == 6


def test_halving_with_real_cpu_timing_and_the_reference_check():
    """No fake: every config compiles, is checked against the reference and timed;
    one config computes a wrong result and must not survive."""
    configs = [dict(bm=32, bn=32), dict(bm=64, bn=64), dict(bm=64, bn=32, skip_last_k=True),
               dict(bm=32, bn=64)]
    t = AutoTuner.from_kernel(gemm_factory, configs).set_kernel_parameters((M, N, K))
    t.set_compile_args(out_idx=[-1], target="cpu").set_profile_args(warmup=1, rep=3, ref_prog=gemm_ref)
    res = t.run(strategy="halving", strategy_options={"eta": 3})   # rungs 4, 2 at rep 1, 3
    assert res.records[2].status == "wrong" and res.config != configs[2]
    finals = [r for r in res.records if r.rep == 3]
    assert len(finals) == 2 and all(r.status == "ok" for r in finals)
    assert res.latency == min(r.latency for r in finals)
    assert res.kernel is not None and res.search["evaluations"] == 6


def test_unknown_strategy_and_executor_are_refused_before_anything_compiles():
    with pytest.raises(ValueError, match="strategy must be one of"):
        _tuner().run(strategy="bayes")
    with pytest.raises(ValueError, match="executor must be 'local' or 'ray'"):
        _tuner().run(executor="dask")
    with pytest.raises(ValueError, match="a budget needs strategy"):
        tilelang.autotune(configs=CONFIGS, budget=3)(tilelang.jit(out_idx=[-1], target="cpu")(gemm_factory))


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["random", "halving", "model"])
def test_strategies_on_the_gpu_time_real_kernels(strategy):
    """On CUDA: each strategy compiles, checks and times real candidates within its
    budget; halving's last rung is timed at full fidelity; the kernel it returns is right."""
    import torch
    configs = {"bm": [64, 128], "bn": [64, 128], "bk": [32, 64]}
    t = AutoTuner.from_kernel(gemm_factory, configs).set_kernel_parameters((1024, 1024, 512))
    t.set_compile_args(out_idx=[-1], target="cuda").set_profile_args(warmup=5, rep=27, ref_prog=gemm_ref)
    res = t.run(strategy=strategy, budget=6 if strategy != "halving" else None, seed=0)
    timed = [r for r in res.records if r.status == "ok"]
    assert timed and res.search["evaluations"] <= {"random": 6, "halving": 8 + 3 + 1, "model": 8 + 5}[strategy]
    assert res.search["benchmark_cost"] <= (6 if strategy != "halving" else 8 + 3 + 1)
    best = next(r for r in res.records if r.config == res.config)
    assert best.rep == 27 and res.latency == best.latency
    a = torch.randn(1024, 512, dtype=torch.float16, device="cuda")
    b = torch.randn(512, 1024, dtype=torch.float16, device="cuda")
    torch.testing.assert_close(res.kernel(a, b), gemm_ref(a, b), atol=1e-2, rtol=1e-2)
