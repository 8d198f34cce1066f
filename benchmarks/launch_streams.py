"""Host-only cost of a launch of the tiny kernel on different streams: a bare ctypes
cuLaunchKernel (the driver floor) on the legacy default, per-thread default and a side
stream, our call on the default and a side stream, torch add_, and a CUDA graph replay."""
import ctypes
import json
import sys
sys.path.insert(0, "."); sys.path.insert(0, "benchmarks")
import torch, tilelang
import launch_overhead as L
from launch_overhead import host_only_us
from tilelang.backend.cuda.host import runtime as rt
k = tilelang.compile(L.tiny_func(), target="cuda")
a = torch.zeros(32, device="cuda"); k(a); torch.cuda.synchronize()
fn = rt._libcuda_launch()
f = ctypes.c_void_p(int(k.launcher._funcs[0]))
ptr = ctypes.c_void_p(a.data_ptr()); params = (ctypes.c_void_p * 1)(ctypes.addressof(ptr)); u = ctypes.c_uint
out = {}
side = torch.cuda.Stream()
for name, h in (("legacy_default", 0), ("per_thread_default", 2), ("torch_side_stream", side.cuda_stream)):
    s = ctypes.c_void_p(h)
    out["bare_" + name] = host_only_us(lambda: fn(f, u(1), u(1), u(1), u(32), u(1), u(1), u(0), s, params, None))
out["ours_default_stream"] = host_only_us(lambda: k(a))
with torch.cuda.stream(side):
    out["ours_side_stream"] = host_only_us(lambda: k(a))
    out["torch_add__side_stream"] = host_only_us(lambda: a.add_(1.0))
out["torch_add__default_stream"] = host_only_us(lambda: a.add_(1.0))
# CUDA graph replay of one launch: the driver's cost for a prebuilt launch
try:
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        k(a)
    out["graph_replay_one_launch"] = host_only_us(lambda: g.replay())
except Exception as e:  # noqa: BLE001
    out["graph_replay_one_launch"] = f"{type(e).__name__}: {e}"[:200]
print(json.dumps(out, indent=1))
