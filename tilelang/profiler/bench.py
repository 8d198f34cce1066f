"""Timing: `do_bench`. On the GPU it times with CUDA events and flushes the L2
between repetitions; on the CPU it uses a monotonic clock."""
from __future__ import annotations

import statistics
import time


def _cuda_sync():
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            return True
    except ImportError:
        pass
    return False


def do_bench(fn, warmup=25, rep=100, _n_warmup=0, _n_repeat=0, grad_to_none=None, quantiles=None,
             fast_flush=True, return_mode="mean", backend="event", device=None):
    """Run `fn` repeatedly and return its time in milliseconds (`warmup`/`rep` are
    milliseconds of warm-up/measurement, as in the published API)."""
    gpu = (device != "cpu") and _cuda_sync()
    if gpu:
        return _bench_gpu(fn, warmup, rep, _n_warmup, _n_repeat, quantiles, return_mode, backend)
    fn()
    t0 = time.perf_counter()
    fn()
    est = max(time.perf_counter() - t0, 1e-7) * 1e3
    n_warm = _n_warmup or max(1, min(100, int(warmup / est)))
    n_rep = _n_repeat or max(1, min(1000, int(rep / est)))
    for _ in range(n_warm):
        fn()
    times = []
    for _ in range(n_rep):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return _summarize(times, quantiles, return_mode)


def _summarize(times, quantiles, return_mode):
    if quantiles is not None:
        s = sorted(times)
        out = [s[min(len(s) - 1, int(q * len(s)))] for q in quantiles]
        return out[0] if len(out) == 1 else out
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    if return_mode == "all":
        return times
    return sum(times) / len(times)


def _bench_gpu(fn, warmup, rep, n_warmup, n_repeat, quantiles, return_mode, backend):
    import torch
    cache = torch.empty(int(256e6 // 4), dtype=torch.int32, device="cuda")  # flushes the 50 MB L2
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        cache.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    est = max(start.elapsed_time(end) / 5, 1e-4)
    n_warm = n_warmup or max(1, int(warmup / est))
    n_rep = n_repeat or max(1, int(rep / est))
    if backend == "cudagraph":
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(10):
                fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(max(1, n_rep // 10)):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) / 10)
        return _summarize(times, quantiles, return_mode)
    for _ in range(n_warm):
        fn()
    ss = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    es = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    for i in range(n_rep):
        cache.zero_()
        ss[i].record()
        fn()
        es[i].record()
    torch.cuda.synchronize()
    return _summarize([s.elapsed_time(e) for s, e in zip(ss, es)], quantiles, return_mode)
