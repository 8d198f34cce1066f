"""The CUDA issue's GEMM cases with the tuned config, against torch, on the GPU, in one
process. `VARIANTS="TILELANG_CUDA_TMA_MULTICAST=1;TILELANG_CUDA_TMA_MULTICAST=0"`
compiles and times each case once per environment setting (`;`-separated, `,` between
variables; lower-case names such as `swizzle_panel=8` are kernel arguments instead), so
that a code-generation switch is compared in the same run. `CASES=8192` keeps the cases
of that size."""
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

g = example("gemm")
cfg = dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256)
variants = [dict(kv.split("=", 1) for kv in v.split(",") if kv) for v in os.environ.get("VARIANTS", "").split(";")]
cases = ((8192, "float16", False, False), (4096, "float16", False, False), (4096, "bfloat16", False, False),
         (4096, "bfloat16", True, True))
cases = [c for c in cases if not os.environ.get("CASES") or str(c[0]) in os.environ["CASES"].split(",")]
out = []
for n, dt, nt, relu in cases:
    tdt = getattr(torch, dt)
    a = torch.randn(n, n, device="cuda", dtype=tdt)
    b = torch.randn(n, n, device="cuda", dtype=tdt)
    bm = b.t() if nt else b
    ref = a.float() @ bm.float()
    ref = ref.relu() if relu else ref
    tf = (lambda: torch.relu(a @ bm)) if relu else (lambda: a @ bm)
    t_torch = do_bench(tf, return_mode="median")
    for var in variants:
        # lower-case names are kernel arguments (swizzle_panel=8), upper-case ones environment switches
        kw = {**cfg, **{k: int(v) for k, v in var.items() if k.islower()}}
        env = {k: v for k, v in var.items() if not k.islower()}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        k = tilelang.compile(g.matmul.get_tir(n, n, n, trans_B=nt, relu=relu, dtype=dt, **kw), out_idx=[-1])
        for key, v in old.items():
            if v is None:
                os.environ.pop(key)
            else:
                os.environ[key] = v
        c = k(a, b)
        err = float((c.float() - ref).norm() / ref.norm())
        t = do_bench(lambda: k(a, b), return_mode="median")
        t_torch2 = do_bench(tf, return_mode="median")   # torch again: clocks drift under load
        r = dict(n=n, dtype=dt, nt=nt, relu=relu, env=var, ms=t, torch_ms=t_torch, torch_ms_after=t_torch2,
                 ratio=min(t_torch, t_torch2) / t, rel_err=err, tflops=2 * n ** 3 / t / 1e9, config=kw,
                 commit=os.environ.get("TL_COMMIT"))
        out.append(r)
        print(json.dumps(r), flush=True)
if os.environ.get("OUT"):
    pathlib.Path(os.environ["OUT"], "gemm_cases.json").write_text(json.dumps(out, indent=1))
