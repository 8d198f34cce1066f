"""Bisects the slow 192x256 / 384-thread GEMM (3 consumer warpgroups): one timed call per code-generation switch."""
import os, sys, json, time
sys.path.insert(0, "."); sys.path.insert(0, "benchmarks")
import torch, tilelang
from tilelang.profiler import do_bench
from bench_suite import example
g = example("gemm")
n = 4096
a = torch.randn(n, n, device="cuda", dtype=torch.float16); b = torch.randn(n, n, device="cuda", dtype=torch.float16)
for env in ({}, {"TILELANG_CUDA_TMA_REFILL": "wait"}, {"TILELANG_CUDA_TMA": "0"}, {"NS": "3"}):
    os.environ.update({k: v for k, v in env.items() if k != "NS"})
    ns = int(env.get("NS", 4))
    k = tilelang.compile(g.matmul.get_tir(n, n, n, dtype="float16", block_M=192, block_N=256, block_K=64, num_stages=ns, threads=384), out_idx=[-1])
    for key in env:
        os.environ.pop(key, None)
    c = k(a, b); torch.cuda.synchronize()
    t = time.perf_counter(); k(a, b); torch.cuda.synchronize(); t = (time.perf_counter() - t) * 1e3
    print(json.dumps({"env": env, "ms_one_call": round(t, 3)}), flush=True)
