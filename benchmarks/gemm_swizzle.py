"""GEMM with and without block swizzling (T.use_swizzle) against torch, on the GPU."""
import importlib.util
import json
import os
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tilelang.profiler import do_bench  # noqa: E402

spec = importlib.util.spec_from_file_location("example_gemm", ROOT / "examples" / "gemm" / "example_gemm.py")
g = importlib.util.module_from_spec(spec)
spec.loader.exec_module(g)
out = []
for n, dt in ((8192, "float16"), (4096, "bfloat16")):
    a = torch.randn(n, n, device="cuda", dtype=getattr(torch, dt))
    b = torch.randn(n, n, device="cuda", dtype=getattr(torch, dt))
    ref = a.float() @ b.float()
    t_torch = do_bench(lambda: a @ b, return_mode="median")
    for panel in (0, 8, 16):
        k = g.matmul(n, n, n, 128, 256, 64, dtype=dt, num_stages=4, threads=256, swizzle_panel=panel)
        c = k(a, b)
        err = float((c.float() - ref).norm() / ref.norm())
        t = do_bench(lambda: k(a, b), return_mode="median")
        r = dict(n=n, dtype=dt, swizzle_panel=panel, ms=t, torch_ms=t_torch, ratio=t_torch / t, rel_err=err,
                 tflops=2 * n ** 3 / t / 1e9)
        out.append(r)
        print(json.dumps(r), flush=True)
if os.environ.get("OUT"):
    pathlib.Path(os.environ["OUT"], "gemm_swizzle.json").write_text(json.dumps(out, indent=1))
