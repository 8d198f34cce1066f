"""A/B of TILELANG_CUDA_EPILOGUE_TMA_STORE (plan/stage_epilogue.py) on the GPU: our GEMM with
the accumulator stored per thread (0) or staged through shared memory + one TMA store (1),
against torch.matmul (cuBLAS), for fp16 8192^3 and bf16 4096^3 with the 128x256x64/4-stage
and 128x128x64/3-stage configs (256 threads). One table; ratio = torch ms / ours (>1: faster).

    python benchmarks/gemm_ab.py
"""
import os
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import tilelang  # noqa: E402
from tilelang.profiler import do_bench  # noqa: E402
from bench_suite import example  # noqa: E402

SWITCHES = ("TILELANG_CUDA_EPILOGUE_TMA_STORE", "TILELANG_CUDA_WS_MULTICAST")
VALUES = (("0", "0"), ("1", "0"), ("0", "1"), ("1", "1"))
g = example("gemm")
configs = (dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256),
           dict(block_M=128, block_N=128, block_K=64, num_stages=3, threads=256))
rows = []
for n, dt in ((8192, "float16"), (4096, "bfloat16")):
    tdt = getattr(torch, dt)
    a, b = torch.randn(n, n, device="cuda", dtype=tdt), torch.randn(n, n, device="cuda", dtype=tdt)
    ref = a @ b
    t_torch = do_bench(lambda: a @ b, warmup=25, rep=100, return_mode="median")
    for cfg in configs:
        for values in VALUES:
            os.environ.update(zip(SWITCHES, values))
            label = f"{cfg['block_M']}x{cfg['block_N']}x{cfg['block_K']}/{cfg['num_stages']}"
            try:
                k = tilelang.compile(g.matmul.get_tir(n, n, n, dtype=dt, **cfg), out_idx=[-1])
                src = k.get_kernel_source()
                took = ("tma_store" in src, "multicast" in src)   # each switch took effect
                c = k(a, b)
                err = float((c.float() - ref.float()).norm() / ref.float().norm())
                t = do_bench(lambda: k(a, b), warmup=25, rep=100, return_mode="median")
            except Exception as e:   # one failing variant keeps the others' rows
                print(f"{dt} {n}^3 {label} {values}: {type(e).__name__}: {e}", flush=True)
                continue
            t_torch = min(t_torch, do_bench(lambda: a @ b, warmup=25, rep=100, return_mode="median"))
            rows.append((f"{dt} {n}^3", label, "/".join(values), "/".join("yes" if x else "no" for x in took),
                         t, 2 * n ** 3 / t / 1e9, t_torch, t_torch / t, err))
for name in SWITCHES:
    os.environ.pop(name, None)
print("| case | config | EPILOGUE_TMA_STORE/WS_MULTICAST | took effect | ms | TFLOP/s | torch ms | torch/ours | rel err |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| {} | {} | {} | {} | {:.4f} | {:.1f} | {:.4f} | {:.3f} | {:.1e} |".format(*r))
