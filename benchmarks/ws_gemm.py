"""A hand-written warp-specialized GEMM (a TMA producer warpgroup, two wgmma consumer
warpgroups, an mbarrier ring: tests/backend/cuda/kernels_ws.ws_gemm_tma) against torch
and against our T.Pipelined GEMM (examples/gemm, tuned config), in one process on the GPU."""
import json
import os
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import tilelang  # noqa: E402
from tilelang.profiler import do_bench  # noqa: E402
from bench_suite import example  # noqa: E402  (benchmarks/ is on the path: scripts run from it)
from tests.backend.cuda.kernels_ws import ws_gemm_tma  # noqa: E402

g = example("gemm")
cfg = dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256)
out = []
for n in (4096, 8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float()
    t_torch = do_bench(lambda: a @ b, return_mode="median")
    row = dict(n=n, dtype="float16", torch_ms=t_torch, commit=os.environ.get("TL_COMMIT"))
    kerns = [("pipelined", g.matmul(n, n, n, dtype="float16", **cfg))]
    for flag in ("1", "0"):   # T.tma_copy as bulk copies (opt-in) / copied by the producer range
        os.environ["TILELANG_CUDA_TMA_COPY"] = flag
        kerns.append((f"warp_specialized_tma_copy_{flag}", tilelang.compile(ws_gemm_tma(n, n, n), target="cuda")))
    for name, kern in kerns:
        c = torch.empty(n, n, device="cuda", dtype=torch.float16)
        run = (lambda: kern(a, b)) if name == "pipelined" else (lambda: kern(a, b, c))
        res = run()
        c = res if res is not None else c
        t = do_bench(run, return_mode="median")
        row[name] = dict(ms=t, ratio=t_torch / t, tflops=2 * n ** 3 / t / 1e9,
                         rel_err=float((c.float() - ref).norm() / ref.norm()))
    out.append(row)
    print(json.dumps(row), flush=True)
if os.environ.get("OUT"):
    pathlib.Path(os.environ["OUT"], "ws_gemm.json").write_text(json.dumps(out, indent=1))
