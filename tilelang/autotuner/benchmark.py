"""Check and time compiled candidates.

CPU targets: in this process, one candidate after another (timings on a CPU are only
meaningful when nothing else runs). CUDA targets: one worker thread per visible GPU,
each pulling candidates from a shared queue; a worker binds its device, loads its own
copy of the kernel there (from the artifact, no recompilation) and makes its own
inputs, so every GPU times candidates independently. With one GPU this is a single
worker.
"""
from __future__ import annotations

import queue
import threading
import traceback

from tilelang.autotuner.timeout import TuneTimeout, run_with_timeout
from tilelang.jit import cache


class Candidate:
    def __init__(self, record, kernel, prim_func, compile_kwargs):
        self.record, self.kernel, self.prim_func, self.compile_kwargs = record, kernel, prim_func, compile_kwargs

    def kernel_for_current_device(self):
        """A JITKernel whose launcher belongs to the current device (the CUDA launcher
        binds to the device that is current at its first launch)."""
        from tilelang.jit import compile as tl_compile
        with cache.preloaded({self.kernel.cache_key(): self.kernel.artifact}):
            return tl_compile(self.prim_func, **self.compile_kwargs)


class InputSource:
    """Inputs for candidates, per device: captured tensors, `supply_prog`, or the
    profiler's generated tensors; reused across candidates when asked to."""

    def __init__(self, profile_args, captured):
        self.args = profile_args
        self.captured = captured
        self._cached = {}
        self._lock = threading.Lock()

    def get(self, profiler, device_key):
        if self.captured is not None:
            with self._lock:
                if device_key not in self._cached:
                    self._cached[device_key] = _to_device(self.captured, profiler.device, device_key)
                return self._cached[device_key]
        if self.args.cache_input_tensors:
            with self._lock:
                if device_key not in self._cached:
                    self._cached[device_key] = self._make(profiler)
                return self._cached[device_key]
        return self._make(profiler)

    def _make(self, profiler):
        if self.args.supply_prog is not None:
            return list(self.args.supply_prog(profiler._get_params(with_output=False)))
        return list(profiler._make_inputs())


def _to_device(tensors, kind, device_key):
    out = []
    for t in tensors:
        if kind != "cpu" and hasattr(t, "to") and hasattr(t, "device"):
            import torch
            dev = torch.device("cuda", device_key)
            out.append(t if t.device == dev else t.to(dev).clone())
        else:
            out.append(t)
    return out


class Bencher:
    def __init__(self, profile_args, warmup, rep, timeout, captured=None, early_stop_factor=None, devices=None,
                 multi_gpu=None):
        self.p = profile_args
        self.warmup, self.rep, self.timeout = warmup, rep, timeout
        # early stop: a candidate whose estimate exceeds factor x the best so far is not
        # timed in full (profiler.do_bench(early_stop_baseline=...))
        self.early_stop_factor, self.best = early_stop_factor, None
        self.devices, self.multi_gpu = devices, multi_gpu
        self.inputs = InputSource(profile_args, captured)
        self.ref_latency = None
        self._ref_lock = threading.Lock()

    # one candidate ---------------------------------------------------------------
    def _measure(self, kernel, device_key):
        p = self.p
        if isinstance(device_key, int):  # this may run on a helper thread: bind the device here
            import torch
            torch.cuda.set_device(device_key)
        prof = kernel.get_profiler(tensor_supply_type=p.supply_type)
        ins = self.inputs.get(prof, device_key)
        if not p.skip_check and p.ref_prog is not None:
            try:
                if p.manual_check_prog is not None:
                    prof.manual_assert_close(p.ref_prog, input_tensors=ins, manual_check_prog=p.manual_check_prog)
                else:
                    prof.assert_allclose(p.ref_prog, input_tensors=ins, atol=p.atol, rtol=p.rtol,
                                         max_mismatched_ratio=p.max_mismatched_ratio)
            except AssertionError as e:
                return "wrong", None, f"{e}"
        with self._ref_lock:
            baseline = self.best * self.early_stop_factor if self.early_stop_factor and self.best else None
        latency = prof.do_bench(n_warmup=self.warmup, n_repeat=self.rep, input_tensors=ins, backend=p.backend,
                                early_stop_baseline=baseline)
        with self._ref_lock:
            if baseline is None or latency <= baseline:
                self.best = latency if self.best is None else min(self.best, latency)
        with self._ref_lock:
            need_ref = self.ref_latency is None and p.ref_prog is not None
            if need_ref:
                self.ref_latency = -1.0  # claimed
        if need_ref:
            try:
                self.ref_latency = prof.do_bench(p.ref_prog, n_warmup=self.warmup, n_repeat=self.rep,
                                                 input_tensors=ins, backend=p.backend)
            except Exception:  # noqa: BLE001 - the reference's own timing is informative only
                self.ref_latency = None
        return "ok", latency, ""

    def run_one(self, cand, device_key, kernel=None):
        rec = cand.record
        rec.device = device_key
        try:
            status, latency, err = run_with_timeout(self._measure, self.timeout, kernel or cand.kernel, device_key)
        except TuneTimeout as e:
            status, latency, err = "bench_timeout", None, str(e)
        except Exception as e:  # noqa: BLE001
            status, latency, err = "bench_error", None, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
        rec.status, rec.latency, rec.error = status, latency, err

    def first_device(self, target_kind):
        """The device one-at-a-time timing uses (use_pipeline): "cpu" or a CUDA ordinal."""
        devices = self._devices(target_kind)
        return devices[0] if devices else "cpu"

    # all candidates --------------------------------------------------------------
    def _devices(self, target_kind):
        devices = _gpu_devices() if target_kind == "cuda" else []
        if devices and self.devices is not None:
            bad = [d for d in self.devices if d not in devices]
            if bad:
                raise ValueError(f"benchmark_devices {bad} are not visible CUDA devices (visible: {devices})")
            devices = list(self.devices)
        if devices and self.multi_gpu is False:
            devices = [_current_gpu()]
        return devices

    def run(self, candidates, target_kind, progress=None):
        devices = self._devices(target_kind)
        if len(devices) <= 1:
            dev = devices[0] if devices else "cpu"
            for c in candidates:
                self.run_one(c, dev)
                _tick(progress, c.record)
        else:
            self._run_multi_gpu(candidates, devices, progress)
        if self.ref_latency is not None and self.ref_latency < 0:
            self.ref_latency = None

    def _run_multi_gpu(self, candidates, devices, progress):
        import torch
        work = queue.Queue()
        for c in candidates:
            work.put(c)
        done = queue.Queue()

        def worker(dev):
            with torch.cuda.device(dev):
                while True:
                    try:
                        c = work.get_nowait()
                    except queue.Empty:
                        return
                    try:
                        k = c.kernel_for_current_device()
                    except Exception as e:  # noqa: BLE001
                        c.record.status, c.record.error = "bench_error", f"loading on cuda:{dev}: {e}"
                    else:
                        self.run_one(c, dev, kernel=k)
                    done.put(c)

        threads = [threading.Thread(target=worker, args=(d,), daemon=True, name=f"tilelang-bench-cuda{d}")
                   for d in devices]
        for t in threads:
            t.start()
        for _ in candidates:
            _tick(progress, done.get().record)
        for t in threads:
            t.join()


def _tick(progress, rec):
    if progress is not None:
        info = f"{rec.latency:.4f} ms" if rec.latency is not None else rec.status
        progress.update(rec.status == "ok", info)


def _current_gpu():
    import torch
    return torch.cuda.current_device()


def _gpu_devices():
    try:
        import torch
        if torch.cuda.is_available():
            return list(range(torch.cuda.device_count()))
    except ImportError:
        pass
    return []
