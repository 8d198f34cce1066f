"""Where candidates are compiled and timed. An executor takes a batch of prepared
configs (index, PrimFunc, compile kwargs) and a fidelity (warm-up, timed iterations)
and fills their `TuneRecord`s; it keeps each compiled kernel, so a config timed again
at another fidelity (successive halving) is not compiled again.

`LocalExecutor`: compile in this host's worker processes (`compile_pool.py`), time on
this host's GPUs or CPU (`benchmark.py`). `RayExecutor` (`ray_executor.py`) does both
on a Ray cluster.
"""
from __future__ import annotations

import time

from tilelang.autotuner.benchmark import Bencher, Candidate
from tilelang.autotuner.compile_pool import compile_candidates
from tilelang.autotuner.progress import Progress
from tilelang.jit import cache


class LocalExecutor:
    def __init__(self, records, target, profile_args, warmup, rep, timeout, captured, bench_options=None,
                 pipeline=False, group_size=1):
        self.records, self.target, self.timeout = records, target, timeout
        self.bencher = Bencher(profile_args, warmup, rep, timeout, captured, **(bench_options or {}))
        self.pipeline, self.group_size = pipeline, group_size
        self.candidates = {}     # index -> Candidate
        self.compiled = set()    # indices whose compile has been attempted
        self.phase_times = {"compile_s": 0.0, "check_and_bench_s": 0.0}

    @property
    def ref_latency(self):
        return self.bencher.ref_latency

    def evaluate(self, items, warmup, rep):
        """items = [(index, prim_func, compile kwargs)]: compile the new ones, then time
        every one that compiled at (warmup, rep)."""
        from tilelang.jit import compile as tl_compile
        self.bencher.warmup, self.bencher.rep = warmup, rep
        records = self.records
        info = {index: (pf, kw) for index, pf, kw in items}

        def adopt(index, result):
            status, ckey, art, secs, err = result
            r = records[index]
            r.status, r.compile_time, r.error = status, secs, err
            if status != "ok":
                return None
            pf, kw = info[index]
            try:
                with cache.preloaded({ckey: art}):
                    kernel = tl_compile(pf, **kw)
            except Exception as e:  # noqa: BLE001
                r.status, r.error = "compile_error", f"{type(e).__name__}: {e}"
                return None
            c = self.candidates[index] = Candidate(r, kernel, pf, kw)
            return c

        fresh = [it for it in items if it[0] not in self.compiled]
        self.compiled.update(it[0] for it in fresh)
        device = self.bencher.first_device(self.target.kind) if self.pipeline else None
        timed = set()

        def compiled_one(index, result):   # use_pipeline: time it while the others compile
            c = adopt(index, result)
            if c is not None:
                self._time(c, device, warmup, rep)
                timed.add(index)
        t0 = time.perf_counter()
        if fresh:
            with Progress(len(fresh), "compiling and benchmarking" if self.pipeline else "compiling") as bar:
                got = compile_candidates(fresh, self.timeout, progress=bar,
                                         on_result=compiled_one if self.pipeline else None,
                                         group_size=self.group_size)
            for index, result in sorted(got.items()):   # timeouts are only reported here
                if index not in timed and index not in self.candidates:
                    adopt(index, result)
        self.phase_times["compile_s"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        todo = [self.candidates[i] for i, _, _ in items if i in self.candidates and i not in timed]
        if todo:
            with Progress(len(todo), "benchmarking") as bar:
                self.bencher.run(todo, self.target.kind, progress=bar)
            for c in todo:
                c.record.warmup, c.record.rep = warmup, rep
        self.phase_times["check_and_bench_s"] += time.perf_counter() - t0

    def _time(self, cand, device, warmup, rep):
        self.bencher.run_one(cand, device)
        cand.record.warmup, cand.record.rep = warmup, rep

    def best_kernel(self, index):
        c = self.candidates[index]
        return c.kernel, c.prim_func

    def close(self):
        if self.bencher.ref_latency is not None and self.bencher.ref_latency < 0:
            self.bencher.ref_latency = None
