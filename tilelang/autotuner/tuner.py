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
import time

from tilelang.autotuner import space
from tilelang.autotuner.benchmark import Bencher, Candidate
from tilelang.autotuner.capture import get_autotune_inputs
from tilelang.autotuner.compile_pool import compile_candidates
from tilelang.autotuner.param import AutotuneResult, CompileArgs, ProfileArgs, TuneRecord
from tilelang.autotuner.progress import Progress
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
        self.jit_impl = fn if isinstance(fn, JITImpl) else None
        self.fn = fn.func if self.jit_impl is not None else fn
        self.configs = configs
        self.compile_args = CompileArgs()
        if self.jit_impl is not None:
            jk = self.jit_impl.jit_kwargs
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
        from tilelang.ir.function import PrimFunc
        kw = dict(self._kwargs)
        kw.update(config_kw)
        if self.jit_impl is not None:
            return self.jit_impl.get_tir(*self._args, **kw)
        pf = self.fn(*self._args, **kw)
        if not isinstance(pf, PrimFunc):
            from tilelang.jit import not_a_prim_func
            raise not_a_prim_func(self.fn, pf)
        return pf

    def _compile_kwargs(self, target, per_config_pass_configs):
        kw = self.compile_args.as_kwargs(per_config_pass_configs)
        kw["target"] = target
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
            group_compile_size=2):
        """Tune (or reuse a cached result) and return an `AutotuneResult`.

        early_stop: a config whose first timing estimate exceeds early_stop_factor times
        the best latency so far is not timed in full (it cannot win).
        benchmark_devices: the CUDA device ordinals to time on; benchmark_multi_gpu=False
        times on the current device only (default: every visible GPU).
        use_pipeline: time each config as soon as it has compiled, while the worker
        processes compile the rest (on one device); enable_grouped_compile: send
        group_compile_size configs to a compile worker per task."""
        if enable_grouped_compile and (not isinstance(group_compile_size, int) or group_compile_size < 1):
            raise ValueError(f"group_compile_size must be an int >= 1, got {group_compile_size!r}")
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
            pf = self._elaborate(kw)
            from tilelang.jit import compile as tl_compile
            kernel = tl_compile(pf, **self._compile_kwargs(target, pc))
        except Exception as e:  # noqa: BLE001 - a stale entry: tune again
            print(f"[tilelang.autotune] ignoring a cached result that no longer builds: {e}", file=sys.stderr)
            return None
        records = [TuneRecord(**r) for r in rec.get("records", [])]
        result = AutotuneResult(latency=rec["latency"], config=rec["config"], ref_latency=rec.get("ref_latency"),
                                libcode=kernel.get_kernel_source(), func=pf, kernel=kernel, records=records,
                                from_cache=True)
        _annotate(kernel, result)
        with self._lock:
            self._memory_cache[key] = result
        return result

    def _tune(self, configs, target, warmup, rep, timeout, captured):
        from tilelang.jit import compile as tl_compile
        records = [TuneRecord(index=i, config=c) for i, c in enumerate(configs)]
        items, funcs, kwargs = [], {}, {}
        for r in records:
            kw, pc = space.split_config(r.config)
            try:
                funcs[r.index] = self._elaborate(kw)
            except Exception as e:  # noqa: BLE001 - e.g. a tile shape that does not fit: skip it
                r.status, r.error = "compile_error", f"{type(e).__name__}: {e}"
                continue
            kwargs[r.index] = self._compile_kwargs(target, pc)
            items.append((r.index, funcs[r.index], kwargs[r.index]))
        bencher = Bencher(self.profile_args, warmup, rep, timeout, captured,
                          **getattr(self, "_bench_options", {}))
        candidates = []

        def adopt(index, result):
            status, ckey, art, secs, err = result
            r = records[index]
            r.status, r.compile_time, r.error = status, secs, err
            if status != "ok":
                return None
            try:
                with cache.preloaded({ckey: art}):
                    kernel = tl_compile(funcs[index], **kwargs[index])
            except Exception as e:  # noqa: BLE001
                r.status, r.error = "compile_error", f"{type(e).__name__}: {e}"
                return None
            c = Candidate(r, kernel, funcs[index], kwargs[index])
            candidates.append(c)
            return c

        pipeline = getattr(self, "_pipeline", False)
        device = bencher.first_device(target.kind) if pipeline else None

        def compiled_one(index, result):   # use_pipeline: time it while the others compile
            c = adopt(index, result)
            if c is not None:
                bencher.run_one(c, device)
        t_compile = time.perf_counter()
        with Progress(len(items), "compiling and benchmarking" if pipeline else "compiling") as bar:
            compiled = compile_candidates(items, timeout, progress=bar, on_result=compiled_one if pipeline else None,
                                          group_size=getattr(self, "_group_size", 1))
        t_compile = time.perf_counter() - t_compile
        for index, result in sorted(compiled.items()):   # timeouts are only reported here
            if records[index].status == "pending" or not pipeline:
                adopt(index, result)
        t_bench = time.perf_counter()
        if not pipeline:
            with Progress(len(candidates), "benchmarking") as bar:
                bencher.run(candidates, target.kind, progress=bar)
        t_bench = time.perf_counter() - t_bench
        good = [c for c in candidates if c.record.status == "ok"]
        if not good:
            raise RuntimeError("autotuning found no valid configuration:\n" +
                               AutotuneResult(records=records).table_str() + "\n" + _first_errors(records))
        best = min(good, key=lambda c: (c.record.latency, c.record.index))
        result = AutotuneResult(latency=best.record.latency, config=best.record.config,
                                ref_latency=bencher.ref_latency, libcode=best.kernel.get_kernel_source(),
                                func=best.prim_func, kernel=best.kernel, records=records)
        result.phase_times = {"compile_s": t_compile, "check_and_bench_s": t_bench}  # wall time per phase
        _annotate(best.kernel, result)
        return result

    def __call__(self):
        return self.run()


def _annotate(kernel, result):
    kernel.latency, kernel.config, kernel.ref_latency = result.latency, result.config, result.ref_latency
    kernel.autotune_result = result


def _summary(result):
    """Plain data for the tuning cache (no kernels, no IR)."""
    return {"config": result.config, "latency": result.latency, "ref_latency": result.ref_latency,
            "records": [dict(index=r.index, config=r.config, status=r.status, latency=r.latency,
                             compile_time=r.compile_time, error=r.error[:1000]) for r in result.records]}


def _first_errors(records, n=3):
    errs = [f"config {r.config}: {r.status}: {r.error.strip().splitlines()[0] if r.error else ''}"
            for r in records if r.status != "ok"]
    return "\n".join(errs[:n])
