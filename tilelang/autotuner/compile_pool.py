"""Compile tuning candidates in parallel worker processes.

The parent elaborates each config into a PrimFunc (cheap Python); the PrimFunc is
pickled to a worker, which runs the pass pipeline and the backend compiler (the slow
part) and sends back the picklable `Artifact` with its kernel-cache key; the worker
also stores it in the kernel cache (disk and remote tiers) so other processes and
hosts reuse it. The parent adopts each artifact with `cache.preloaded`, so building
its `JITKernel` does not compile again.

Workers come from a "forkserver" context (POSIX; it preloads tilelang once and does
not re-import the user's `__main__`) or "spawn" elsewhere. They get the parent's
TILELANG_* environment at start. The pool size is CPU-count aware:

TILELANG_AUTO_TUNING_CPU_COUNTS     workers to use (default -1: from the utilization)
TILELANG_AUTO_TUNING_CPU_UTILITIES  fraction of the available CPUs (default 0.9)
TILELANG_AUTO_TUNING_MAX_CPU_COUNT  upper bound (default -1: none)
"""
from __future__ import annotations

import concurrent.futures as cf
import math
import multiprocessing as mp
import os
import pickle
import sys
import time

from tilelang.autotuner.timeout import TuneTimeout, run_with_timeout

_ENV_PREFIXES = ("TILELANG_", "TL_", "CUDA_", "CXX", "CC", "PATH", "LD_LIBRARY_PATH", "TMPDIR")


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def resolve_num_workers(n_tasks: int) -> int:
    cpus = available_cpus()
    counts = int(os.environ.get("TILELANG_AUTO_TUNING_CPU_COUNTS", "-1"))
    if counts > 0:
        n = counts
    else:
        n = max(1, int(cpus * float(os.environ.get("TILELANG_AUTO_TUNING_CPU_UTILITIES", "0.9"))))
    cap = int(os.environ.get("TILELANG_AUTO_TUNING_MAX_CPU_COUNT", "-1"))
    if cap > 0:
        n = min(n, cap)
    return max(1, min(n, n_tasks))


def _env_snapshot():
    return {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}


def _worker_init(env, sys_path):
    for k in [k for k in os.environ if k.startswith(_ENV_PREFIXES) and k not in env]:
        del os.environ[k]
    os.environ.update(env)
    for p in reversed(sys_path):
        if p not in sys.path:
            sys.path.insert(0, p)


def compile_one(prim_func, kwargs):
    """Compile in this process: (kernel-cache key, artifact, seconds)."""
    from tilelang.jit import compile as tl_compile
    t0 = time.perf_counter()
    k = tl_compile(prim_func, **kwargs)
    return k.cache_key(), k.artifact, time.perf_counter() - t0


def _task(index, payload, kwargs, timeout):
    """Worker entry: never raises; returns (index, status, key, artifact, seconds, error)."""
    try:
        prim_func = pickle.loads(payload)
        key, art, secs = run_with_timeout(compile_one, timeout, prim_func, kwargs)
        return index, "ok", key, art, secs, ""
    except TuneTimeout as e:
        return index, "compile_timeout", None, None, None, str(e)
    except BaseException as e:  # noqa: BLE001 - reported back, never kills the worker
        return index, "compile_error", None, None, None, _describe(e)


def _task_group(group, timeout):
    """Worker entry for a group of configs compiled one after another in one task
    (`enable_grouped_compile`): the results of `_task` for each."""
    return [_task(index, payload, kw, timeout) for index, payload, kw in group]


def _describe(e):
    text = f"{type(e).__name__}: {e}"
    return text if len(text) < 4000 else text[:4000] + " ..."


def _context():
    methods = mp.get_all_start_methods()
    if os.name == "posix" and sys.platform != "darwin" and "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["tilelang.autotuner.compile_pool"])
        return ctx
    return mp.get_context("spawn")


def compile_candidates(items, timeout, progress=None, workers=None, on_result=None, group_size=1):
    """Compile `items` = [(index, prim_func, compile kwargs)]. Returns
    {index: (status, key, artifact, seconds, error)}. `on_result(index, result)` is called
    as each one arrives (while the pool goes on compiling the others: the tuner's
    use_pipeline); `group_size` > 1 sends that many configs to a worker per task."""
    results = {}
    pending = []
    for index, pf, kw in items:
        try:
            pending.append((index, pickle.dumps(pf, protocol=pickle.HIGHEST_PROTOCOL), pf, kw))
        except Exception:  # noqa: BLE001 - unpicklable IR (should not happen): compile here
            pending.append((index, None, pf, kw))
    n_workers = workers or resolve_num_workers(len(pending))
    local = [p for p in pending if p[1] is None]
    remote = [p for p in pending if p[1] is not None]
    if n_workers <= 1:
        local, remote = local + remote, []
    if remote:
        local += _compile_in_pool(remote, timeout, n_workers, results, progress, on_result, max(1, group_size))
    for index, _, pf, kw in local:
        results[index] = _compile_here(pf, kw, timeout)
        if progress is not None:
            progress.update(results[index][0] == "ok")
        if on_result is not None:
            on_result(index, results[index])
    return results


def _compile_here(pf, kwargs, timeout):
    try:
        key, art, secs = run_with_timeout(compile_one, timeout, pf, kwargs)
        return "ok", key, art, secs, ""
    except TuneTimeout as e:
        return "compile_timeout", None, None, None, str(e)
    except Exception as e:  # noqa: BLE001
        return "compile_error", None, None, None, _describe(e)


def _compile_in_pool(pending, timeout, n_workers, results, progress, on_result=None, group_size=1):
    """Fills `results`; returns the items the pool could not handle (compile them here)."""
    pool = cf.ProcessPoolExecutor(max_workers=n_workers, mp_context=_context(), initializer=_worker_init,
                                  initargs=(_env_snapshot(), list(sys.path)))
    groups = [pending[i:i + group_size] for i in range(0, len(pending), group_size)]
    futures = {pool.submit(_task_group, [(index, payload, kw) for index, payload, _, kw in g], timeout): g
               for g in groups}
    # a backstop in case a worker hangs in C code its own timer cannot interrupt
    deadline = None if not timeout else (timeout + 5) * group_size * math.ceil(len(groups) / n_workers) + 30
    leftover, killed = [], False
    try:
        for fut in cf.as_completed(futures, timeout=deadline):
            try:
                answers = fut.result()
            except cf.process.BrokenProcessPool:
                leftover.extend(futures[fut])
                continue
            for index, status, key, art, secs, err in answers:
                results[index] = (status, key, art, secs, err)
                if progress is not None:
                    progress.update(status == "ok")
                if on_result is not None:
                    on_result(index, results[index])
    except cf.TimeoutError:
        killed = True
        for index, *_ in (item for g in futures.values() for item in g):
            if index not in results and all(index != li[0] for li in leftover):
                results[index] = ("compile_timeout", None, None, None, "the compile worker did not answer in time")
                if progress is not None:
                    progress.update(False)
    finally:
        if killed:
            for p in list(getattr(pool, "_processes", {}).values()):
                p.kill()
        pool.shutdown(wait=not killed, cancel_futures=True)
    if leftover:
        print(f"[tilelang.autotune] the compile worker pool broke; compiling {len(leftover)} config(s) "
              f"in this process", file=sys.stderr)
    return leftover
