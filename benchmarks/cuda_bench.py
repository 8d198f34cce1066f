"""CUDA backend benchmark: GEMM fp16 4096^3 against torch.matmul (cuBLAS) and an
elementwise add against torch, timed in one run. Writes JSON to $OUT (or stdout)."""
import json
import os
import subprocess
import sys
import time
import pathlib

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "backend" / "cuda"))
import kernels as K  # noqa: E402
from tilelang.backend.registry import get_backend, parse_target  # noqa: E402


def bench(fn, warmup=25, rep=100):
    try:
        from triton.testing import do_bench
        return do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
    except ImportError:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(50):
            s.record(); fn(); e.record(); torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        return sorted(times)[len(times) // 2]


def build(func):
    be = get_backend("cuda")
    t0 = time.perf_counter()
    art = be.build(func, parse_target("cuda"))
    return be.load(art), time.perf_counter() - t0, art


def gemm_cases(M=4096, N=4096, K_=4096):
    out = []
    a = torch.randn(M, K_, device="cuda", dtype=torch.float16)
    b = torch.randn(K_, N, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float()
    t_torch = bench(lambda: torch.matmul(a, b))
    flops = 2 * M * N * K_
    for cfg in [dict(bm=128, bn=128, bk=32, threads=128), dict(bm=128, bn=128, bk=32, threads=256),
                dict(bm=128, bn=256, bk=32, threads=256), dict(bm=64, bn=64, bk=32, threads=128)]:
        launch, ct, art = build(K.gemm(M, N, K_, **cfg))
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
        launch([a, b, c])
        torch.cuda.synchronize()
        err = ((c.float() - ref).norm() / ref.norm()).item()
        t = bench(lambda: launch([a, b, c]))
        out.append({"kernel": "gemm_fp16", "shape": [M, N, K_], "config": cfg, "ms": t, "torch_ms": t_torch,
                    "tflops": flops / t / 1e9, "torch_tflops": flops / t_torch / 1e9,
                    "ratio_vs_torch": t_torch / t, "rel_err": err, "compile_s": ct,
                    "smem": art.meta["kernels"][0]["smem"]})
        print(out[-1], flush=True)
    return out


def add_case(N=1 << 28):
    a = torch.randn(N, device="cuda")
    b = torch.randn(N, device="cuda")
    c = torch.empty_like(a)
    launch, ct, _ = build(K.elementwise_add(N, block=1024))
    launch([a, b, c])
    torch.cuda.synchronize()
    ok = torch.equal(c, a + b)
    t = bench(lambda: launch([a, b, c]))
    t_torch = bench(lambda: torch.add(a, b, out=c))
    gbs = 3 * N * 4 / t / 1e6
    r = {"kernel": "add_fp32", "n": N, "ms": t, "torch_ms": t_torch, "GBps": gbs,
         "torch_GBps": 3 * N * 4 / t_torch / 1e6, "ratio_vs_torch": t_torch / t, "correct": ok, "compile_s": ct}
    print(r, flush=True)
    return [r]


def main():
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    res = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "commit": commit or os.environ.get("TL_COMMIT", ""),
           "device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": []}
    res["results"] += add_case()
    res["results"] += gemm_cases()
    text = json.dumps(res, indent=1)
    dest = os.environ.get("OUT")
    if dest:
        with open(os.path.join(dest, "cuda_bench.json"), "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
