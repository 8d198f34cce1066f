"""`AutoTuner`: compile every config of a kernel factory (in parallel worker
processes), check each against the reference, time the survivors and keep the
fastest. The best config is cached (memory, disk, and the remote cache when one is
configured) per (factory source, problem arguments, configs, compile/profile
arguments, device), so the next run of the same problem does not tune again.

TILELANG_AUTO_TUNING_DISABLE_CACHE  1: always tune (the kernel cache still applies)
TILELANG_AUTO_TUNING_PROGRESS       0: no progress bar
"""
from __future__ import annotations

import os
import sys
import threading

from tilelang.autotuner import space
from tilelang.autotuner.capture import get_autotune_inputs
from tilelang.autotuner.executor import LocalExecutor
from tilelang.autotuner.param import AutotuneResult, CompileArgs, ProfileArgs, TuneRecord
from tilelang.jit import cache
from tilelang.profiler.supply import TensorSupplyType

NAMESPACE = "autotuner"


def tuning_cache_enabled() -> bool:
    off = os.environ.get("TILELANG_AUTO_TUNING_DISABLE_CACHE", "0").lower() in ("1", "true", "yes", "on")
    return cache.is_cache_enabled() and not off


class AutoTuner:
    """`AutoTuner.from_kernel(factory, configs).set_compile_args(...).set_profile_args(...).run()`.

    `factory(**config)` (plus any problem arguments given to
    `set_kernel_parameters`) returns a `@T.prim_func`; a `@tilelang.jit` factory
    also works and lends its compile arguments as defaults."""

    _memory_cache: dict = {}
    _lock = threading.Lock()

    def __init__(self, fn, configs):
        from tilelang.jit import JITImpl
        from tilelang.jit.eager import EagerKernel
        self.jit_impl = fn if isinstance(fn, JITImpl) else None
        # an eager kernel (tensor annotations in its body): each config is traced with the
        # problem arguments (tensors, or `T.const` sizes by name) into a PrimFunc whose
        # outputs (`T.empty`) the trace names
        self.eager = fn if isinstance(fn, EagerKernel) else None
        self.fn = fn.func if self.jit_impl is not None or self.eager is not None else fn
        self.configs = configs
        self.compile_args = CompileArgs()
        if self.jit_impl is not None or self.eager is not None:
            jk = (self.jit_impl or self.eager).jit_kwargs
            self.compile_args = CompileArgs(**{k: jk.get(k, getattr(self.compile_args, k)) for k in (
                "out_idx", "target", "execution_backend", "target_host", "verbose", "pass_configs",
                "compile_flags")})
        self.profile_args = ProfileArgs()
        self._args, self._kwargs = (), {}

    @classmethod
    def from_kernel(cls, kernel, configs):
        return cls(kernel, configs)

    def set_compile_args(self, out_idx=None, target=None, execution_backend=None, target_host=None,
                         verbose=None, pass_configs=None, compile_flags=None):
        self.compile_args = CompileArgs(
            out_idx=out_idx, target=target if target is not None else os.environ.get("TILELANG_DEFAULT_TARGET", "auto"),
            execution_backend=execution_backend or "auto", target_host=target_host, verbose=bool(verbose),
            pass_configs=pass_configs, compile_flags=compile_flags)
        return self

    def set_profile_args(self, warmup=25, rep=100, timeout=30, supply_type=TensorSupplyType.Auto, ref_prog=None,
                         supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
                         manual_check_prog=None, cache_input_tensors=False, backend="event"):
        self.profile_args = ProfileArgs(warmup=warmup, rep=rep, timeout=timeout, supply_type=supply_type,
                                        ref_prog=ref_prog, supply_prog=supply_prog, rtol=rtol, atol=atol,
                                        max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check,
                                        manual_check_prog=manual_check_prog,
                                        cache_input_tensors=cache_input_tensors, backend=backend)
        return self

    def set_kernel_parameters(self, args=(), kwargs=None):
        """The problem arguments passed to the factory with every config."""
        self._args, self._kwargs = tuple(args), dict(kwargs or {})
        return self

    # ------------------------------------------------------------------------------
    def _elaborate(self, config_kw):
        """(PrimFunc, out_idx: the eager kernel's outputs, else None: the compile arguments')."""
        kw = dict(self._kwargs)
        kw.update(config_kw)
        if self.eager is not None:
            return self.eager.elaborate(*self._args, **kw)
        return self._elaborate_factory(kw), None

    def _elaborate_factory(self, kw):
        from tilelang.ir.function import PrimFunc
        if self.jit_impl is not None:
            return self.jit_impl.get_tir(*self._args, **kw)
        pf = self.fn(*self._args, **kw)
        if not isinstance(pf, PrimFunc):
            from tilelang.jit import not_a_prim_func
            raise not_a_prim_func(self.fn, pf)
        return pf

    def _compile_kwargs(self, target, per_config_pass_configs, out_idx=None):
        kw = self.compile_args.as_kwargs(per_config_pass_configs)
        kw["target"] = target
        if self.eager is not None:
            kw["out_idx"] = out_idx
        return kw

    def _key(self, configs, captured):
        key = space.tuning_key(self.fn, self._args, self._kwargs, configs, self.compile_args, self.profile_args)
        if captured is not None:
            key = cache.make_key(key, space.normalize(list(captured)))
        return key

    @property
    def cache_dir(self):
        """Where tuning results are stored on disk (the kernel cache's `autotuner` tier)."""
        from pathlib import Path
        from tilelang.env import cache_dir
        return Path(cache_dir()) / NAMESPACE

    def generate_cache_key(self, parameters=None, extra_parameters=None):
        """The key under which this tuning problem's result is cached (None when caching
        is off). `parameters`/`extra_parameters` (the published signature) are folded
        into it when given."""
        if not tuning_cache_enabled():
            return None
        configs = space.expand_configs(self.configs, self._args, self._kwargs)
        key = self._key(configs, get_autotune_inputs())
        if parameters or extra_parameters:
            key = cache.make_key(key, space.normalize([parameters or {}, extra_parameters or {}]))
        return key

    def run(self, warmup=None, rep=None, timeout=None, *, early_stop=False, early_stop_factor=2.0,
            benchmark_devices=None, benchmark_multi_gpu=None, use_pipeline=False, enable_grouped_compile=False,
            group_compile_size=2, strategy="exhaustive", budget=None, seed=0, strategy_options=None,
            executor="local", ray_address=None):
        """Tune (or reuse a cached result) and return an `AutotuneResult`.

        early_stop: a config whose first timing estimate exceeds early_stop_factor times
        the best latency so far is not timed in full (it cannot win).
        benchmark_devices: the CUDA device ordinals to time on; benchmark_multi_gpu=False
        times on the current device only (default: every visible GPU).
        use_pipeline: time each config as soon as it has compiled, while the worker
        processes compile the rest (on one device); enable_grouped_compile: send
        group_compile_size configs to a compile worker per task.
        strategy: "exhaustive" (every config), "random", "halving" or "model" (see
        `tilelang.autotuner.search`), or a `Strategy` object; budget: benchmark cost
        allowed, in full benchmarks (a shorter benchmark costs its share; an int, or a
        float in (0, 1] = that fraction of the configs); seed: makes the search
        repeatable; strategy_options: e.g. {"eta": 3} for halving, {"screen_divisor": 10}
        or {"screen": False, "n_init": 8, "batch_size": 4} for model.
        executor: "local" (this host's worker processes and GPUs) or "ray" (compile and
        benchmark tasks on a Ray cluster, `ray_address` or RAY_ADDRESS or a local one)."""
        if enable_grouped_compile and (not isinstance(group_compile_size, int) or group_compile_size < 1):
            raise ValueError(f"group_compile_size must be an int >= 1, got {group_compile_size!r}")
        from tilelang.autotuner.search import make_strategy
        self._strategy = make_strategy(strategy, budget, seed, **(strategy_options or {}))
        if executor not in ("local", "ray"):
            raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
        self._executor_kind, self._ray_address = executor, ray_address
        self._pipeline = bool(use_pipeline)
        self._group_size = group_compile_size if enable_grouped_compile else 1
        from tilelang.backend.registry import parse_target
        if early_stop and early_stop_factor < 1.0:
            raise ValueError(f"early_stop_factor must be >= 1.0, got {early_stop_factor}")
        self._bench_options = dict(early_stop_factor=early_stop_factor if early_stop else None,
                                   devices=benchmark_devices, multi_gpu=benchmark_multi_gpu)
        p = self.profile_args
        warmup = p.warmup if warmup is None else warmup
        rep = p.rep if rep is None else rep
        timeout = p.timeout if timeout is None else timeout
        configs = space.expand_configs(self.configs, self._args, self._kwargs)
        if not configs:
            raise ValueError("no configurations to tune: `configs` is empty")
        space.check_config_keys(configs, self.fn)
        captured = get_autotune_inputs()
        target = parse_target(self.compile_args.target)
        use_cache = tuning_cache_enabled()
        key = self._key(configs, captured) if use_cache else None
        if key is not None and self._strategy.name != "exhaustive":   # other strategies may find another best
            key = cache.make_key(key, repr(self._strategy.describe()))
        if key is not None:
            hit = self._cached(key, target)
            if hit is not None:
                return hit
        result = self._tune(configs, target, warmup, rep, timeout, captured)
        if key is not None:
            with self._lock:
                self._memory_cache[key] = result
            cache.store_blob(NAMESPACE, key, _summary(result))
        return result

    def _cached(self, key, target):
        with self._lock:
            hit = self._memory_cache.get(key)
        if hit is not None:
            return hit
        rec = cache.load_blob(NAMESPACE, key)
        if not isinstance(rec, dict) or "config" not in rec:
            return None
        try:
            kw, pc = space.split_config(rec["config"])
            pf, out_idx = self._elaborate(kw)
            from tilelang.jit import compile as tl_compile
            kernel = tl_compile(pf, **self._compile_kwargs(target, pc, out_idx))
        except Exception as e:  # noqa: BLE001 - a stale entry: tune again
            print(f"[tilelang.autotune] ignoring a cached result that no longer builds: {e}", file=sys.stderr)
            return None
        records = [TuneRecord(**r) for r in rec.get("records", [])]
        result = AutotuneResult(latency=rec["latency"], config=rec["config"], ref_latency=rec.get("ref_latency"),
                                libcode=kernel.get_kernel_source(), func=pf, kernel=kernel, records=records,
                                from_cache=True, search=rec.get("search"))
        _annotate(kernel, result)
        with self._lock:
            self._memory_cache[key] = result
        return result

    def _make_executor(self, records, target, warmup, rep, timeout, captured):
        if getattr(self, "_executor_kind", "local") == "ray":
            from tilelang.autotuner.ray_executor import RayExecutor
            problem = space.tuning_key(self.fn, self._args, self._kwargs, [r.config for r in records],
                                       self.compile_args, self.profile_args)
            return RayExecutor(records, target, self.profile_args, timeout, captured,
                               bench_options=getattr(self, "_bench_options", {}), address=self._ray_address,
                               problem_key=problem)
        return LocalExecutor(records, target, self.profile_args, warmup, rep, timeout, captured,
                             bench_options=getattr(self, "_bench_options", {}),
                             pipeline=getattr(self, "_pipeline", False), group_size=getattr(self, "_group_size", 1))

    def _tune(self, configs, target, warmup, rep, timeout, captured):
        from tilelang.autotuner.search import make_strategy, run_search
        strategy = getattr(self, "_strategy", None) or make_strategy()
        records = [TuneRecord(index=i, config=c) for i, c in enumerate(configs)]
        prepared = {}   # index -> (prim_func, compile kwargs), or None when elaboration failed
        executor = self._make_executor(records, target, warmup, rep, timeout, captured)

        def evaluate(indices, fidelity):
            items = []
            for i in indices:
                if i not in prepared:
                    prepared[i] = self._prepare(records[i], target)
                if prepared[i] is not None:
                    items.append((i, *prepared[i]))
            if items:
                executor.evaluate(items, *fidelity)
            return {i: records[i].latency for i in indices
                    if records[i].status == "ok" and records[i].rep == fidelity[1]}
        try:
            ctx = run_search(strategy, configs, evaluate, warmup, rep)
        finally:
            executor.close()
        full = ctx.measured()
        good = [i for i, lat in full.items() if lat != float("inf")]
        if not good:
            raise RuntimeError("autotuning found no valid configuration:\n" +
                               AutotuneResult(records=records).table_str() + "\n" + _first_errors(records))
        best_i = min(good, key=lambda i: (full[i], i))
        kernel, func = executor.best_kernel(best_i)
        best = records[best_i]
        result = AutotuneResult(latency=full[best_i], config=best.config, ref_latency=executor.ref_latency,
                                libcode=kernel.get_kernel_source(), func=func, kernel=kernel, records=records)
        result.phase_times = dict(executor.phase_times)  # wall time per phase
        result.search = dict(strategy=strategy.name, budget=ctx.budget, evaluations=ctx.used,
                             benchmark_cost=round(ctx.spent, 6),
                             configs_evaluated=len({i for i, _ in ctx.results}),
                             timed_iterations=sum(w + r for _, (w, r) in ctx.results))
        _annotate(kernel, result)
        return result

    def _prepare(self, record, target):
        kw, pc = space.split_config(record.config)
        try:
            pf, out_idx = self._elaborate(kw)
            return pf, self._compile_kwargs(target, pc, out_idx)
        except Exception as e:  # noqa: BLE001 - e.g. a tile shape that does not fit: skip it
            record.status, record.error = "compile_error", f"{type(e).__name__}: {e}"
            return None

    def __call__(self):
        return self.run()


def _annotate(kernel, result):
    kernel.latency, kernel.config, kernel.ref_latency = result.latency, result.config, result.ref_latency
    kernel.autotune_result = result


def _summary(result):
    """Plain data for the tuning cache (no kernels, no IR)."""
    return {"config": result.config, "latency": result.latency, "ref_latency": result.ref_latency,
            "search": result.search,
            "records": [dict(index=r.index, config=r.config, status=r.status, latency=r.latency,
                             compile_time=r.compile_time, error=r.error[:1000], warmup=r.warmup, rep=r.rep)
                        for r in result.records]}


def _first_errors(records, n=3):
    errs = [f"config {r.config}: {r.status}: {r.error.strip().splitlines()[0] if r.error else ''}"
            for r in records if r.status != "ok"]
    return "\n".join(errs[:n])
