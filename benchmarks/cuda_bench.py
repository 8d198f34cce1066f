"""CUDA backend benchmark, one run against the best alternative a user has:
GEMM (fp16 8192^3 NN, bf16 4096^3 NN, bf16 4096^3 NT + ReLU) vs torch.matmul (cuBLAS),
FlashAttention forward vs torch SDPA (flash backend), an elementwise add vs torch.
Writes JSON (commit, date, device, ms, TFLOP/s, ratio vs torch, relative error) to $OUT."""
import json
import os
import pathlib
import subprocess
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "flash_attention"))
from tests.backend.cuda import kernels as K  # noqa: E402
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


def rel_err(x, ref):
    return ((x.float() - ref.float()).norm() / ref.float().norm()).item()


GEMM_CFGS = [dict(bm=128, bn=256, bk=64, threads=256, stages=3), dict(bm=128, bn=256, bk=64, threads=256, stages=4)]


def gemm_case(M, N, K_, dtype, trans_B=False, relu=False, cfgs=GEMM_CFGS):
    out = []
    td = getattr(torch, dtype)
    a = torch.randn(M, K_, device="cuda", dtype=td)
    b = torch.randn(N, K_, device="cuda", dtype=td) if trans_B else torch.randn(K_, N, device="cuda", dtype=td)
    bb = b.t() if trans_B else b
    ref_fn = (lambda: torch.relu(torch.matmul(a, bb))) if relu else (lambda: torch.matmul(a, bb))
    ref = ref_fn()
    t_torch = bench(ref_fn)
    flops = 2 * M * N * K_
    for cfg in cfgs:
        try:
            launch, ct, art = build(K.gemm(M, N, K_, dtype=dtype, trans_B=trans_B, relu=relu, **cfg))
            c = torch.full((M, N), float("nan"), device="cuda", dtype=td)
            launch([a, b, c])
            torch.cuda.synchronize()
            err = rel_err(c, ref)
            t = bench(lambda: launch([a, b, c]))
            r = {"kernel": f"gemm_{dtype}_{'NT' if trans_B else 'NN'}{'_relu' if relu else ''}", "shape": [M, N, K_],
                 "config": cfg, "ms": t, "torch_ms": t_torch, "tflops": flops / t / 1e9,
                 "torch_tflops": flops / t_torch / 1e9, "ratio_vs_torch": t_torch / t, "rel_err": err,
                 "compile_s": ct, "smem": art.meta["kernels"][0]["smem"],
                 "wgmma": "wgmma_gemm" in art.source}
        except Exception as e:  # noqa: BLE001 - report and go on
            r = {"kernel": f"gemm_{dtype}", "shape": [M, N, K_], "config": cfg, "error": repr(e)[:500]}
        print(r, flush=True)
        out.append(r)
    return out


def fa_case(b, h, s, d, causal, cfgs):
    import example_flash_attention as FA
    from torch.nn.attention import sdpa_kernel, SDPBackend
    out = []
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        fn = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
        ref = fn()
        t_torch = bench(fn)
    flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    for cfg in cfgs:
        cfg = dict(cfg)
        rs = cfg.pop("rs", "1")   # TILELANG_CUDA_WGMMA_RS: P from registers (1) or through shared memory (0)
        try:
            os.environ["TILELANG_CUDA_WGMMA_RS"] = rs
            launch, ct, art = build(FA.flash_attention.get_tir(b, h, s, s, d, causal, "bhsd", **cfg))
            o = torch.full_like(q, float("nan"))
            launch([q, k, v, o])
            torch.cuda.synchronize()
            err = rel_err(o, ref)
            t = bench(lambda: launch([q, k, v, o]))
            r = {"kernel": "flash_attention_fwd", "shape": [b, h, s, d], "causal": causal, "config": cfg,
                 "wgmma_rs": "wgmma_gemm_rs" in art.source, "ms": t,
                 "torch_sdpa_flash_ms": t_torch, "tflops": flops / t / 1e9, "torch_tflops": flops / t_torch / 1e9,
                 "ratio_vs_torch": t_torch / t, "rel_err_vs_sdpa": err, "compile_s": ct,
                 "smem": art.meta["kernels"][0]["smem"]}
        except Exception as e:  # noqa: BLE001
            r = {"kernel": "flash_attention_fwd", "shape": [b, h, s, d], "causal": causal, "config": cfg,
                 "error": repr(e)[:500]}
        finally:
            os.environ.pop("TILELANG_CUDA_WGMMA_RS", None)
        print(r, flush=True)
        out.append(r)
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
    r = {"kernel": "add_fp32", "n": N, "ms": t, "torch_ms": t_torch, "GBps": 3 * N * 4 / t / 1e6,
         "torch_GBps": 3 * N * 4 / t_torch / 1e6, "ratio_vs_torch": t_torch / t, "correct": ok, "compile_s": ct}
    print(r, flush=True)
    return [r]


FA_CFGS = {128: [dict(block_M=128, block_N=64, num_stages=2, threads=256),
                 dict(block_M=128, block_N=64, num_stages=2, threads=256, rs="0"),
                 dict(block_M=128, block_N=128, num_stages=2, threads=256),
                 dict(block_M=64, block_N=64, num_stages=2, threads=128),
                 dict(block_M=64, block_N=64, num_stages=1, threads=128),
                 dict(block_M=64, block_N=128, num_stages=2, threads=128)],
           64: [dict(block_M=128, block_N=128, num_stages=2, threads=256),
                dict(block_M=128, block_N=64, num_stages=2, threads=256),
                dict(block_M=64, block_N=128, num_stages=2, threads=128),
                dict(block_M=64, block_N=64, num_stages=2, threads=128)]}


def main():
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    commit = commit if len(commit) == 40 else os.environ.get("TL_COMMIT", "")
    res = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "commit": commit or os.environ.get("TL_COMMIT", ""),
           "note": os.environ.get("TL_BENCH_NOTE", ""), "device": torch.cuda.get_device_name(),
           "torch": torch.__version__, "results": []}
    which = sys.argv[1:] or ["gemm", "fa", "add"]
    if "gemm" in which:
        res["results"] += gemm_case(8192, 8192, 8192, "float16")
        res["results"] += gemm_case(4096, 4096, 4096, "bfloat16")
        res["results"] += gemm_case(4096, 4096, 4096, "bfloat16", trans_B=True, relu=True)
        res["results"] += gemm_case(4096, 4096, 4096, "float16", cfgs=GEMM_CFGS[:1])
    if "fa" in which:
        res["results"] += fa_case(8, 16, 4096, 128, False, FA_CFGS[128])
        res["results"] += fa_case(8, 16, 4096, 128, True, FA_CFGS[128])
        res["results"] += fa_case(16, 16, 2048, 64, False, FA_CFGS[64])
    if "add" in which:
        res["results"] += add_case()
    text = json.dumps(res, indent=1)
    dest = os.environ.get("OUT")
    if dest:
        with open(os.path.join(dest, "cuda_bench.json"), "w") as f:
            f.write(text)
    for r in res["results"]:
        if "error" in r:
            print(f"{r['kernel']:24s} {str(r.get('shape')):22s} ERROR {r['error'][:120]}")
        else:
            print(f"{r['kernel'][:20]:20s} {str(r.get('shape')):20s} {str(r.get('causal', '')):5s} ours {r['ms']:.3f} ms "
                  f"torch {r.get('torch_ms', r.get('torch_sdpa_flash_ms')):.3f} ms ratio {r['ratio_vs_torch']:.2f} "
                  f"err {r.get('rel_err', r.get('rel_err_vs_sdpa', 0)):.1e} {r.get('config', '')}")


if __name__ == "__main__":
    main()
