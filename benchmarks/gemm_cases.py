"""The CUDA issue's three GEMM cases with the tuned config, against torch, on the GPU."""
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
cfg = dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256)
out = []
for n, dt, nt, relu in ((8192, "float16", False, False), (4096, "bfloat16", False, False), (4096, "bfloat16", True, True)):
    tdt = getattr(torch, dt)
    a = torch.randn(n, n, device="cuda", dtype=tdt)
    b = torch.randn(n, n, device="cuda", dtype=tdt)
    bm = b.t() if nt else b
    ref = a.float() @ bm.float()
    ref = ref.relu() if relu else ref
    tf = (lambda: torch.relu(a @ bm)) if relu else (lambda: a @ bm)
    t_torch = do_bench(tf, return_mode="median")
    k = g.matmul(n, n, n, trans_B=nt, relu=relu, dtype=dt, **cfg)
    c = k(a, b)
    err = float((c.float() - ref).norm() / ref.norm())
    t = do_bench(lambda: k(a, b), return_mode="median")
    r = dict(n=n, dtype=dt, nt=nt, relu=relu, ms=t, torch_ms=t_torch, ratio=t_torch / t, rel_err=err,
             tflops=2 * n ** 3 / t / 1e9, config=cfg, commit=os.environ.get("TL_COMMIT"))
    out.append(r)
    print(json.dumps(r), flush=True)
if os.environ.get("OUT"):
    pathlib.Path(os.environ["OUT"], "gemm_cases.json").write_text(json.dumps(out, indent=1))
