"""Host overhead of launching a tiny kernel through `JITKernel.__call__`.

CPU (always): the Python side of `JITKernel.__call__` with the launcher replaced by a
no-op (argument checks, output allocation, packing), for a 1-input kernel and for a
2-input kernel with an `out_idx` output and a dynamic dimension; plus the CUDA
launcher's own Python side with the driver call replaced by a no-op (built with NVRTC,
tensors faked as CUDA tensors) when NVRTC is installed.

GPU (when one is visible): the real thing as `bench_suite.launch_overhead` measures it
(N calls, then synchronize, host clock): our tiny kernel against `a.add_(1.0)`.

Writes JSON to $OUT/launch_overhead.json (or ./launch_overhead.json) and prints it.
Usage: python benchmarks/launch_overhead.py [--n 20000]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402


def tiny_func():
    @T.prim_func
    def tiny(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                A[i] = A[i] + 1.0
    return tiny


def add_dyn_func():
    n = T.dynamic("n")

    @T.prim_func
    def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    C[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]
    return add


def add_1024_func():
    """Issue 16's case: a 1024-element add with its output allocated per call (out_idx)."""
    @T.prim_func
    def add(A: T.Tensor((1024,), "float32"), B: T.Tensor((1024,), "float32"), C: T.Tensor((1024,), "float32")):
        with T.Kernel(4, threads=256) as bx:
            for i in T.Parallel(256):
                C[bx * 256 + i] = A[bx * 256 + i] + B[bx * 256 + i]
    return add


@tilelang.jit
def eager_add(A, B):
    """The same add in the eager style (issue 17: the per-call dispatch of eager kernels)."""
    N = T.const("N")
    A: T.Tensor((N,), "float32")
    B: T.Tensor((N,), "float32")
    C = T.empty((N,), "float32")
    with T.Kernel(T.ceildiv(N, 256), threads=256) as bx:
        for i in T.Parallel(256):
            C[bx * 256 + i] = A[bx * 256 + i] + B[bx * 256 + i]
    return C


def per_call_us(fn, n, repeat=5, sync=None):
    """Best of `repeat` runs of n calls, in microseconds per call."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        if sync is not None:
            sync()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


def _noop(buffers, ints=(), floats=()):
    return None


def cpu_fake_launcher(n):
    out = {}
    k = tilelang.compile(tiny_func(), target="cpu")
    k.launcher = _noop
    a = torch.zeros(32)
    k(a)
    out["tiny_1_input_us"] = per_call_us(lambda: k(a), n)
    k2 = tilelang.compile(add_dyn_func(), out_idx=[-1], target="cpu")
    k2.launcher = _noop
    x, y = torch.zeros(1000), torch.zeros(1000)
    k2(x, y)
    out["add_2_inputs_out_idx_dynamic_us"] = per_call_us(lambda: k2(x, y), n)
    out["torch_cpu_add__us"] = per_call_us(lambda: a.add_(1.0), n)
    k3 = tilelang.compile(add_1024_func(), out_idx=[-1], target="cpu")
    k3.launcher = _noop
    x, y = torch.zeros(1024), torch.zeros(1024)
    k3(x, y)
    out["add_1024_out_idx_us"] = per_call_us(lambda: k3(x, y), n)
    eager = tilelang.jit(target="cpu")(eager_add.func)
    eager(x, y)
    ek = next(iter(eager.cache.values()))[0]
    ek.launcher = _noop
    eager(x, y)
    out["eager_add_1024_us"] = per_call_us(lambda: eager(x, y), n)
    out["torch_cpu_add_1024_out_of_place_us"] = per_call_us(lambda: x + y, n)
    return out


class _FakeCudaTensor:
    """Stands for a CUDA tensor (only for timing the launcher's Python side): the
    attributes the launcher reads, `data_ptr`/`get_device` being a real CPU tensor's
    (C) methods so that their cost is representative."""
    is_cuda = True

    def __init__(self, t):
        self.t, self.dtype, self.shape = t, t.dtype, t.shape
        self.is_contiguous = t.is_contiguous
        self.data_ptr = t.data_ptr
        self.get_device = t.get_device


_FAKE_DRIVER_C = """
typedef unsigned int u;
int cuLaunchKernel(void* f, u gx, u gy, u gz, u bx, u by, u bz, u smem, void* stream, void** params,
                   void** extra) { return 0; }
"""


def _c_fake_driver():
    """A C function with cuLaunchKernel's signature that does nothing, or None."""
    import ctypes
    import shutil
    import subprocess
    import tempfile
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "fake.c"), "w") as f:
        f.write(_FAKE_DRIVER_C)
    so = os.path.join(d, "libfakecuda.so")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", so, os.path.join(d, "fake.c")], check=True)
    fn = ctypes.CDLL(so).cuLaunchKernel
    fn.restype = ctypes.c_int
    return fn


def cpu_fake_driver(n):
    """The CUDA launcher's Python side (packing, stream lookup, driver call replaced)."""
    from tilelang.backend.cuda.host.nvrtc import nvrtc_available
    if not nvrtc_available():
        return {"skipped": "NVRTC not installed"}
    from tilelang.backend.cuda.host import runtime as rt
    from tilelang.backend.registry import get_backend, parse_target
    be = get_backend("cuda")
    art = be.build(tiny_func(), parse_target("cuda -arch=sm_90a"))
    launcher = be.load(art)
    if not hasattr(rt, "fake_driver_for_benchmarks"):
        return {"skipped": "this runtime has no fake-driver hook"}
    rt.fake_driver_for_benchmarks(launcher)
    a = _FakeCudaTensor(torch.zeros(32))
    bufs = [a]
    launcher(bufs, (), ())
    out = {"cuda_launcher_python_side_us": per_call_us(lambda: launcher(bufs, (), ()), n)}
    fn = _c_fake_driver()
    if fn is not None:  # the whole path: JITKernel + launcher + the call into C
        k = tilelang.compile(tiny_func(), target="cuda -arch=sm_90a")
        rt.fake_driver_for_benchmarks(k.launcher, fn)
        k(a)
        out["jit_kernel_call_c_fake_driver_us"] = per_call_us(lambda: k(a), n)
        out["c_launch_extension"] = "C0(" in k.launcher._fast.source
        # the same through ctypes' call (TILELANG_CUDA_C_LAUNCH=0), for the A/B in one run
        out.update(_ctypes_side(k, a, fn, n))
    return out


def _ctypes_side(k, a, fn, n):
    from tilelang.backend.cuda.host import runtime as rt
    try:
        from tilelang.backend.cuda.host import c_launch
    except ImportError:
        return {}
    old = os.environ.get("TILELANG_CUDA_C_LAUNCH")
    os.environ["TILELANG_CUDA_C_LAUNCH"] = "0"
    c_launch.reset()
    try:
        rt.fake_driver_for_benchmarks(k.launcher, fn)
        k.launcher = k.launcher   # the JIT fast path binds the launcher's entry: rebuild it
        k(a)
        k(a)
        return {"jit_kernel_call_c_fake_driver_ctypes_us": per_call_us(lambda: k(a), n)}
    finally:
        if old is None:
            os.environ.pop("TILELANG_CUDA_C_LAUNCH")
        else:
            os.environ["TILELANG_CUDA_C_LAUNCH"] = old
        c_launch.reset()


def gpu(n):
    k = tilelang.compile(tiny_func(), target="cuda")
    a = torch.zeros(32, device="cuda")
    for _ in range(10):
        k(a)
    torch.cuda.synchronize()
    assert bool((a == 10).all()), a
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # the launch goes to the current stream
        b = torch.zeros(32, device="cuda")
        k(b)
        k(b)
    s.synchronize()
    assert bool((b == 2).all()), b
    for _ in range(100):
        k(a)
    torch.cuda.synchronize()
    sync = torch.cuda.synchronize
    res = {"device": torch.cuda.get_device_name(0)}
    res["tilelang_tiny_us"] = per_call_us(lambda: k(a), n, repeat=3, sync=sync)
    res["torch_add__us"] = per_call_us(lambda: a.add_(1.0), n, repeat=3, sync=sync)
    res["torch_empty_like_us"] = per_call_us(lambda: torch.empty_like(a), n, repeat=3, sync=sync)
    launcher = k.launcher
    bufs = [a]
    res["launcher_only_us"] = per_call_us(lambda: launcher(bufs, (), ()), n, repeat=3, sync=sync)
    res["fast_paths_used"] = bool(getattr(k._fast, "source", None)) and bool(getattr(launcher._fast, "source", None))
    # the general paths (what every call went through before): the full argument checks
    # and the cuda-bindings launch with torch.cuda.current_stream
    general = launcher._general
    res["general_launcher_only_us"] = per_call_us(lambda: general(bufs, (), ()), n // 2, repeat=2, sync=sync)
    slow = k._slow
    res["jit_slow_checks_fast_launcher_us"] = per_call_us(lambda: slow((a,)), n // 2, repeat=2, sync=sync)
    k2 = tilelang.compile(add_dyn_func(), out_idx=[-1], target="cuda")
    x, y = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    torch.testing.assert_close(k2(x, y), x + y)
    res["add_2_inputs_out_idx_dynamic_us"] = per_call_us(lambda: k2(x, y), n, repeat=3, sync=sync)
    res["torch_add_out_of_place_us"] = per_call_us(lambda: x + y, n, repeat=3, sync=sync)
    # issue 16's measure: a 1024-element add, output allocated per call, against torch's a + b
    k3 = tilelang.compile(add_1024_func(), out_idx=[-1], target="cuda")
    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    torch.testing.assert_close(k3(x, y), x + y)
    torch.testing.assert_close(eager_add(x, y), x + y)
    res["add_1024_out_idx_us"] = per_call_us(lambda: k3(x, y), n, repeat=3, sync=sync)
    res["eager_add_1024_us"] = per_call_us(lambda: eager_add(x, y), n, repeat=3, sync=sync)
    res["torch_add_1024_out_of_place_us"] = per_call_us(lambda: x + y, n, repeat=3, sync=sync)
    res["host_only_add_1024_out_idx_us"] = host_only_us(lambda: k3(x, y))
    res["host_only_eager_add_1024_us"] = host_only_us(lambda: eager_add(x, y))
    res["host_only_torch_add_1024_out_of_place_us"] = host_only_us(lambda: x + y)
    res.update(gpu_ctypes_side(k3, x, y, n, sync))
    res.update(driver_floor(k, a, n))
    return res


def gpu_ctypes_side(k, x, y, n, sync):
    """The 1024-element add again with the launch through ctypes (TILELANG_CUDA_C_LAUNCH=0),
    for the A/B in one run; and whether the C extension was used above (or why not)."""
    try:
        from tilelang.backend.cuda.host import c_launch
    except ImportError:
        return {}
    out = {"c_launch_extension": c_launch.extension() is not None, "c_launch_reason": c_launch.reason()}
    old = os.environ.get("TILELANG_CUDA_C_LAUNCH")
    os.environ["TILELANG_CUDA_C_LAUNCH"] = "0"
    c_launch.reset()
    try:
        k.launcher._fast = None   # rebuilt on the next call, now with the ctypes call
        k.launcher = k.launcher   # and the JIT fast path that binds it
        for _ in range(3):
            torch.testing.assert_close(k(x, y), x + y)
        out["c_launch_off_fast_path_source_has_lock"] = "with lock" in k.launcher._fast.source
        out["add_1024_out_idx_ctypes_us"] = per_call_us(lambda: k(x, y), n, repeat=3, sync=sync)
        out["host_only_add_1024_out_idx_ctypes_us"] = host_only_us(lambda: k(x, y))
    finally:
        if old is None:
            os.environ.pop("TILELANG_CUDA_C_LAUNCH")
        else:
            os.environ["TILELANG_CUDA_C_LAUNCH"] = old
        c_launch.reset()
        k.launcher._fast = None
        k.launcher = k.launcher
    return out


def driver_floor(k, a, n):
    """What one launch costs below us on this machine: the same kernel launched by a
    bare ctypes `cuLaunchKernel` loop (arguments packed once, torch's stream), against
    our call and torch's `add_`, each timed both ways: n calls then one synchronize
    (the GPU's pace can show), and batches of 256 calls timed before synchronizing
    (the host's side only; the queue never fills)."""
    import ctypes
    from tilelang.backend.cuda.host import runtime as rt
    fn = rt._libcuda_launch()
    f = ctypes.c_void_p(int(k.launcher._funcs[0]))
    ptr = ctypes.c_void_p(a.data_ptr())
    params = (ctypes.c_void_p * 1)(ctypes.addressof(ptr))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    u = ctypes.c_uint

    def raw():
        return fn(f, u(1), u(1), u(1), u(32), u(1), u(1), u(0), stream, params, None)
    before = a.clone()
    assert raw() == 0
    torch.cuda.synchronize()
    assert bool((a == before + 1).all()), "the bare launch did not run the kernel"
    sync = torch.cuda.synchronize
    out = {"driver_bare_ctypes_us": per_call_us(raw, n, repeat=3, sync=sync)}

    out["host_only_driver_bare_ctypes_us"] = host_only_us(raw)
    out["host_only_tilelang_tiny_us"] = host_only_us(lambda: k(a))
    out["host_only_torch_add__us"] = host_only_us(lambda: a.add_(1.0))
    return out


def host_only_us(fn, m=256, repeat=40):
    """The host's cost of one call: best of `repeat` batches of `m` calls timed before
    synchronizing (the launch queue never fills), in microseconds."""
    best = float("inf")
    for _ in range(repeat):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(m):
            fn()
        best = min(best, (time.perf_counter() - t) / m * 1e6)
    torch.cuda.synchronize()
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    res = {"label": args.label, "python": platform.python_version(), "torch": torch.__version__,
           "host": platform.node(), "n": args.n, "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    try:
        res["cpu_fake_launcher"] = cpu_fake_launcher(args.n)
    except Exception as e:  # noqa: BLE001 - e.g. no C compiler for the CPU backend
        res["cpu_fake_launcher"] = {"error": f"{type(e).__name__}: {e}"}
    try:
        res["cpu_fake_driver"] = cpu_fake_driver(args.n)
    except Exception as e:  # noqa: BLE001
        res["cpu_fake_driver"] = {"error": f"{type(e).__name__}: {e}"}
    if torch.cuda.is_available():
        res["gpu"] = gpu(args.n)
    text = json.dumps(res, indent=2)
    print(text)
    path = os.path.join(os.environ.get("OUT", "."), "launch_overhead.json")
    with open(path, "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
