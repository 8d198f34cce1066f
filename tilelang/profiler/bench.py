"""Timing: `do_bench`.

GPU (torch with CUDA, `device` not "cpu"): CUDA events around each call, the L2
flushed before each one by zeroing a buffer larger than the L2; backend "cudagraph"
captures a batch of calls in a CUDA graph and times replays (launch overhead
excluded); "cupti" sums the durations of the kernels `fn` launches, from the CUDA
activity records of torch's profiler (CUPTI): kernel time only, host time and gaps
excluded, as the published package measures it. CPU: a monotonic clock
(`time.perf_counter`) around each call.

`warmup` and `rep` are milliseconds of warm-up and measurement from which the
iteration counts are derived; `_n_warmup` / `_n_repeat` set the counts directly.
"""
from __future__ import annotations

import statistics
import time

_FLUSH_CACHE: dict = {}


def _gpu_ready(device) -> bool:
    if device == "cpu" or (hasattr(device, "type") and device.type == "cpu"):
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def do_bench(fn, warmup=25, rep=100, _n_warmup=0, _n_repeat=0, grad_to_none=None, quantiles=None,
             fast_flush=True, return_mode="mean", backend="event", device=None, cache_size=256,
             early_stop_baseline=None):
    """Run `fn` repeatedly and return its time in milliseconds (a list when
    `quantiles` has several entries or `return_mode="all"`).

    `early_stop_baseline` (ms): when the first estimate is already slower than this,
    return the estimate instead of measuring fully (used by the autotuner)."""
    if _gpu_ready(device):
        import torch
        dev = torch.device("cuda", device) if isinstance(device, int) else (
            torch.device(device) if device is not None else None)
        if dev is not None and dev.index is not None:
            with torch.cuda.device(dev):
                return _bench_gpu(fn, warmup, rep, _n_warmup, _n_repeat, quantiles, return_mode, backend,
                                  cache_size, early_stop_baseline, grad_to_none)
        return _bench_gpu(fn, warmup, rep, _n_warmup, _n_repeat, quantiles, return_mode, backend,
                          cache_size, early_stop_baseline, grad_to_none)
    return _bench_cpu(fn, warmup, rep, _n_warmup, _n_repeat, quantiles, return_mode, early_stop_baseline)


def _bench_cpu(fn, warmup, rep, n_warmup, n_repeat, quantiles, return_mode, early_stop_baseline):
    fn()
    est = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        est.append((time.perf_counter() - t0) * 1e3)
    est_ms = max(min(est), 1e-6)
    if early_stop_baseline is not None and est_ms > early_stop_baseline:
        return _summarize(est, quantiles, return_mode)
    n_warm = n_warmup or max(1, min(1000, int(warmup / est_ms)))
    n_rep = n_repeat or max(1, min(10000, int(rep / est_ms)))
    for _ in range(n_warm):
        fn()
    times = []
    clock = time.perf_counter
    for _ in range(n_rep):
        t = clock()
        fn()
        times.append((clock() - t) * 1e3)
    return _summarize(times, quantiles, return_mode)


def _summarize(times, quantiles, return_mode):
    if quantiles is not None:
        s = sorted(times)
        out = [_quantile(s, q) for q in quantiles]
        return out[0] if len(out) == 1 else out
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    if return_mode == "all":
        return list(times)
    return sum(times) / len(times)


def _quantile(sorted_times, q):
    """Linear interpolation between closest ranks (as torch.quantile)."""
    n = len(sorted_times)
    if n == 1:
        return sorted_times[0]
    pos = min(max(q, 0.0), 1.0) * (n - 1)
    lo = int(pos)
    hi = min(lo + 1, n - 1)
    return sorted_times[lo] + (sorted_times[hi] - sorted_times[lo]) * (pos - lo)


def _flush_buffer(cache_size_mb):
    import torch
    dev = torch.cuda.current_device()
    key = (dev, cache_size_mb)
    buf = _FLUSH_CACHE.get(key)
    if buf is None:
        buf = torch.empty(int(cache_size_mb * 1024 * 1024 // 4), dtype=torch.int32, device="cuda")
        _FLUSH_CACHE[key] = buf
    return buf


def _bench_gpu(fn, warmup, rep, n_warmup, n_repeat, quantiles, return_mode, backend, cache_size,
               early_stop_baseline, grad_to_none):
    import torch
    flush = _flush_buffer(cache_size)
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    est = max(start.elapsed_time(end) / 5, 1e-4)
    if early_stop_baseline is not None and est > early_stop_baseline:
        return _summarize([est], quantiles, return_mode)
    n_warm = n_warmup or max(1, int(warmup / est))
    n_rep = n_repeat or max(1, int(rep / est))
    if backend == "cudagraph":
        return _bench_cudagraph(fn, n_warm, n_rep, quantiles, return_mode)
    if backend == "cupti":
        return _bench_cupti(fn, n_warm, n_rep, flush, quantiles, return_mode)
    for _ in range(n_warm):
        fn()
    ss = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    es = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    for i in range(n_rep):
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        flush.zero_()
        ss[i].record()
        fn()
        es[i].record()
    torch.cuda.synchronize()
    return _summarize([s.elapsed_time(e) for s, e in zip(ss, es)], quantiles, return_mode)


def _kernel_times_us(prof):
    """{kernel name: total device microseconds} from a torch profiler run."""
    out = {}
    for e in prof.key_averages():
        t = getattr(e, "self_device_time_total", None)
        if t is None:
            t = getattr(e, "self_cuda_time_total", 0)
        if t:
            out[e.key] = out.get(e.key, 0.0) + float(t)
    return out


_FLUSH_KERNELS = {}   # (dtype, elements, device) of a flush buffer -> the names of the kernels zeroing it


def _bench_cupti(fn, n_warm, n_rep, flush, quantiles, return_mode):
    import torch
    from torch.profiler import ProfilerActivity, profile
    for _ in range(n_warm):
        fn()
    torch.cuda.synchronize()
    # which kernels the L2 flush runs: profiled once a process per flush buffer kind (each
    # profiler session sets up and tears down CUPTI's activity buffers: fewer sessions)
    key = (flush.dtype, flush.numel(), flush.device)
    flush_kernels = _FLUSH_KERNELS.get(key)
    if flush_kernels is None:
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            flush.zero_()
            torch.cuda.synchronize()
        flush_kernels = _FLUSH_KERNELS[key] = frozenset(_kernel_times_us(p))
    n_rep = max(1, min(n_rep, 1000))
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(n_rep):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    times = _kernel_times_us(p)
    ms = sum(t for k, t in times.items() if k not in flush_kernels) / n_rep / 1e3
    return _summarize([ms], quantiles, return_mode)


def _bench_cudagraph(fn, n_warm, n_rep, quantiles, return_mode):
    import torch
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # graphs are captured off the default stream
        for _ in range(max(1, min(n_warm, 10))):
            fn()
        torch.cuda.synchronize()
        per_graph = max(1, min(n_rep, 10))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            for _ in range(per_graph):
                fn()
        torch.cuda.synchronize()
        g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(max(3, n_rep // per_graph)):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(stream)
            g.replay()
            e.record(stream)
            e.synchronize()
            times.append(s.elapsed_time(e) / per_graph)
    return _summarize(times, quantiles, return_mode)
