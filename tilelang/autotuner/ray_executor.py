"""Tuning on a Ray cluster (`pip install tilelang[ray]`; `AutoTuner.run(executor="ray")`).

Each config becomes two Ray tasks:

- a compile task (`num_cpus=1`) on any node: it runs the pass pipeline and the backend
  compiler and stores the kernel in tilelang's cache (the node's disk tier and, when
  TILELANG_REMOTE_CACHE names a Redis server, the shared tier), and returns the
  artifact through Ray's object store;
- a benchmark task that depends on it: `num_gpus=1` for CUDA targets, so each GPU of
  the cluster times one candidate at a time (Ray sets CUDA_VISIBLE_DEVICES to the GPU
  it grants), `num_cpus=1` for the CPU target. It loads the artifact (no recompile),
  checks the candidate against the reference and times it.

Ray starts each benchmark as soon as its compile finishes, so compiling and timing
overlap across the cluster. A task whose worker process or node is lost is retried
by Ray on another worker (`max_retries`, TILELANG_AUTO_TUNING_RAY_RETRIES, default 3).
A benchmark writes its result to the cache under an idempotent key (this tuning run,
the config, the fidelity) before it returns, and looks that key up before it measures:
a retry of a task that had finished measuring returns the stored result instead of
timing the config again. A task that still fails after its retries is recorded as
that config's error (nothing is silently dropped).

Every node needs tilelang installed (the same version) and the user's module
importable when the factory, `ref_prog` or `supply_prog` live in one; TILELANG_*
variables of the driver are passed to the workers. `early_stop` applies to the local
executor only (the cluster's timings run concurrently).
"""
from __future__ import annotations

import os
import pickle
import time
import uuid

RESULTS = "autotuner-results"   # cache namespace of the per-run benchmark results
_ENV_PREFIXES = ("TILELANG_", "TL_")


def _require_ray():
    try:
        import ray
    except ImportError:
        raise ImportError("executor='ray' needs Ray: pip install 'tilelang[ray]'") from None
    return ray


def compile_task(index, payload, kwargs, timeout):
    """Runs on a cluster worker: (status, kernel-cache key, artifact, seconds, error)."""
    from tilelang.autotuner.compile_pool import _task
    _, status, key, art, secs, err = _task(index, payload, kwargs, timeout)
    return status, key, art, secs, err


def bench_task(result_key, index, config, compiled, payload, kwargs, profile_args, warmup, rep, timeout, captured,
               kind):
    """Runs on a cluster worker (a GPU of its own for CUDA): check and time one compiled
    candidate. Returns a dict with status, latency, error, device, ref_latency, reused."""
    from tilelang.jit import cache
    stored = cache.load_blob(RESULTS, result_key)
    if isinstance(stored, dict):
        return dict(stored, reused=True)
    status, ckey, art, _secs, err = compiled
    if status != "ok":
        return dict(status=status, latency=None, error=err, device=None, ref_latency=None, reused=False)
    from tilelang.jit import compile as tl_compile
    from tilelang.autotuner.benchmark import Bencher, Candidate
    from tilelang.autotuner.param import TuneRecord
    device = _device_name(kind)
    pf = pickle.loads(payload)
    try:
        with cache.preloaded({ckey: art}):
            kernel = tl_compile(pf, **kwargs)
    except Exception as e:  # noqa: BLE001
        return dict(status="bench_error", latency=None, error=f"loading the kernel on {device}: {e}", device=device,
                    ref_latency=None, reused=False)
    rec = TuneRecord(index=index, config=config)
    bencher = Bencher(profile_args, warmup, rep, timeout, captured)
    bencher.run_one(Candidate(rec, kernel, pf, kwargs), 0 if kind == "cuda" else "cpu")
    if bencher.ref_latency is not None and bencher.ref_latency < 0:
        bencher.ref_latency = None
    out = dict(status=rec.status, latency=rec.latency, error=rec.error, device=device,
               ref_latency=bencher.ref_latency, pid=os.getpid(), reused=False)
    cache.store_blob(RESULTS, result_key, out)
    return out


def _device_name(kind):
    try:
        import ray
        if not ray.is_initialized():   # called outside a Ray worker (tests): do not start Ray
            return kind
        ctx = ray.get_runtime_context()
        node = ctx.get_node_id()[:8]
        if kind == "cuda":
            return f"{node}:cuda{','.join(str(g) for g in ray.get_gpu_ids())}"
        return f"{node}:cpu"
    except Exception:  # noqa: BLE001
        return kind


class RayExecutor:
    def __init__(self, records, target, profile_args, timeout, captured, bench_options=None, address=None,
                 problem_key="", max_retries=None):
        ray = _require_ray()
        self.ray = ray
        self.records, self.target, self.profile_args, self.timeout = records, target, profile_args, timeout
        self.retries = int(os.environ.get("TILELANG_AUTO_TUNING_RAY_RETRIES", "3")) if max_retries is None \
            else max_retries
        opts = bench_options or {}
        if opts.get("devices") is not None or opts.get("multi_gpu") is False:
            raise ValueError("benchmark_devices / benchmark_multi_gpu do not apply to executor='ray' (Ray assigns "
                             "the GPUs: limit them with CUDA_VISIBLE_DEVICES or `ray start --num-gpus`)")
        if opts.get("early_stop_factor"):
            import warnings
            warnings.warn("early_stop applies to executor='local' only; the Ray cluster times every candidate "
                          "in full", stacklevel=3)
        if not ray.is_initialized():
            address = address or os.environ.get("RAY_ADDRESS")
            env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
            if not address:   # a local Ray instance: its workers import this very tilelang
                env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), os.environ.get("PYTHONPATH")) if p)
            ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False, include_dashboard=False)
            self._owns_ray = True
        else:
            self._owns_ray = False
        self.kind = target.kind
        self.run_id = f"{problem_key}-{uuid.uuid4().hex}"
        self._compile = ray.remote(num_cpus=1, max_retries=self.retries)(compile_task)
        res = dict(num_gpus=1) if self.kind == "cuda" else dict(num_cpus=1)
        self._bench = ray.remote(max_retries=self.retries, **res)(bench_task)
        self._captured = ray.put(_to_host(captured)) if captured is not None else None
        self._payloads, self._compiled, self._kwargs, self._funcs = {}, {}, {}, {}
        self.ref_latency = None
        self.phase_times = {"cluster_wall_s": 0.0, "compile_cpu_s_sum": 0.0}

    def result_key(self, index, warmup, rep):
        from tilelang.jit import cache
        return cache.make_key(self.run_id, index, warmup, rep)

    def evaluate(self, items, warmup, rep):
        from tilelang.autotuner.progress import Progress
        ray = self.ray
        t0 = time.perf_counter()
        futures = {}
        for index, pf, kw in items:
            if index not in self._compiled:
                self._payloads[index] = ray.put(pickle.dumps(pf, protocol=pickle.HIGHEST_PROTOCOL))
                self._funcs[index], self._kwargs[index] = pf, kw
                self._compiled[index] = self._compile.remote(index, self._payloads[index], kw, self.timeout)
            ref = self._bench.remote(self.result_key(index, warmup, rep), index, self.records[index].config,
                                     self._compiled[index], self._payloads[index], kw, self.profile_args, warmup,
                                     rep, self.timeout, self._captured, self.kind)
            futures[ref] = index
        with Progress(len(futures), "compiling and benchmarking on the Ray cluster") as bar:
            pending = list(futures)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                index = futures[done[0]]
                out = self._outcome(done[0], index)
                rec = self.records[index]
                rec.status, rec.latency, rec.error, rec.device = (out["status"], out["latency"], out["error"],
                                                                  out["device"])
                rec.warmup, rec.rep = warmup, rep
                if rec.compile_time is None:
                    rec.compile_time = self._compile_seconds(index)
                if self.ref_latency is None and out.get("ref_latency"):
                    self.ref_latency = out["ref_latency"]
                bar.update(rec.status == "ok", f"{rec.latency:.4f} ms" if rec.latency is not None else rec.status)
        self.phase_times["cluster_wall_s"] += time.perf_counter() - t0

    def _outcome(self, ref, index):
        try:
            return self.ray.get(ref)
        except Exception as e:  # noqa: BLE001 - lost after every retry: record it, keep tuning
            return dict(status="bench_error", latency=None, device=None, ref_latency=None,
                        error=f"the Ray task for config {index} failed after {self.retries} retries: "
                              f"{type(e).__name__}: {e}")

    def _compile_seconds(self, index):
        try:
            secs = self.ray.get(self._compiled[index])[3]
        except Exception:  # noqa: BLE001
            return None
        if secs:
            self.phase_times["compile_cpu_s_sum"] += secs
        return secs

    def best_kernel(self, index):
        """The winner, built on the driver from the artifact its compile task made."""
        from tilelang.jit import compile as tl_compile
        from tilelang.jit import cache
        status, key, art, _, err = self.ray.get(self._compiled[index])
        with cache.preloaded({key: art}):
            return tl_compile(self._funcs[index], **self._kwargs[index]), self._funcs[index]

    def close(self):
        self._payloads.clear()


def _package_root():
    """The folder holding this `tilelang` package (for the PYTHONPATH of local Ray workers):
    two folders above this file (tilelang/autotuner/)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _to_host(tensors):
    return [t.cpu() if hasattr(t, "cpu") and hasattr(t, "device") else t for t in tensors]
