"""The benchmark suite of the CUDA issue, in one process on one GPU: our kernels
(the examples, compiled for CUDA) against torch (cuBLAS; SDPA with the flash and
cuDNN backends), Triton kernels of the same job, and the device-to-device copy
bandwidth. Writes `suite.json` and `suite.md` under $OUT (default ./bench_out).

    python benchmarks/bench_suite.py [--quick] [--only gemm,attention,...]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import time
import traceback

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("TILELANG_DEFAULT_TARGET", "cuda")

import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
from tilelang.profiler import do_bench  # noqa: E402

RESULTS = []


def example(name, file=None):
    path = ROOT / "examples" / name / f"example_{file or name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{file or name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def bench(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def record(job, impl, ms, flops=None, nbytes=None, err=None, **extra):
    r = {"job": job, "impl": impl, "ms": ms, **extra}
    if flops:
        r["tflops"] = flops / ms / 1e9
    if nbytes:
        r["gbps"] = nbytes / ms / 1e6
    if err is not None:
        r["rel_err"] = err
    RESULTS.append(r)
    print(json.dumps(r), flush=True)


def guarded(fn):
    def run(*a, **k):
        try:
            fn(*a, **k)
        except Exception as e:  # noqa: BLE001 - one failing job must not stop the suite
            RESULTS.append({"job": fn.__name__, "impl": "error", "error": f"{type(e).__name__}: {e}"[:500]})
            traceback.print_exc()
    run.__name__ = fn.__name__
    return run


def triton_kernels():
    try:
        import triton_kernels as tk
        return tk
    except Exception as e:  # noqa: BLE001
        print("triton unavailable:", e)
        return None


# ------------------------------------------------------------------ jobs
@guarded
def copy_bandwidth():
    x = torch.empty(2 ** 30 // 2, dtype=torch.float16, device="cuda")
    y = torch.empty_like(x)
    ms = bench(lambda: y.copy_(x))
    record("d2d_copy 1GiB", "torch", ms, nbytes=2 * x.numel() * 2)


@guarded
def gemm(M, N, K, dtype, trans_b=False, relu=False, configs=()):
    g = example("gemm")
    tdt = getattr(torch, dtype)
    a = torch.randn(M, K, device="cuda", dtype=tdt)
    b = torch.randn(N, K, device="cuda", dtype=tdt) if trans_b else torch.randn(K, N, device="cuda", dtype=tdt)
    bm = b.t() if trans_b else b
    ref = a.double() @ bm.double()
    if relu:
        ref = ref.relu()
    job = f"gemm{'_nt' if trans_b else ''}{'_relu' if relu else ''} {dtype} {M}x{N}x{K}"
    flops = 2 * M * N * K
    tfn = (lambda: torch.relu(a @ bm)) if relu else (lambda: a @ bm)
    record(job, "torch", bench(tfn), flops, err=rel_err(tfn(), ref))
    tk = triton_kernels()
    if tk is not None:
        out = tk.matmul(a, bm, relu=relu)
        record(job, "triton", bench(lambda: tk.matmul(a, bm, relu=relu)), flops, err=rel_err(out, ref))
    best = None
    for cfg in configs:
        try:
            t0 = time.perf_counter()
            k = g.matmul(M, N, K, trans_B=trans_b, relu=relu, dtype=dtype, **cfg)
            ct = time.perf_counter() - t0
            out = k(a, b)
            ms = bench(lambda: k(a, b))
            record(job, "tilelang", ms, flops, err=rel_err(out, ref), config=cfg, compile_s=ct)
            best = ms if best is None else min(best, ms)
        except Exception as e:  # noqa: BLE001
            RESULTS.append({"job": job, "impl": "tilelang", "config": cfg, "error": str(e)[:300]})


@guarded
def attention(B, H, S, D, causal, configs=()):
    fa = example("flash_attention")
    from torch.nn.attention import sdpa_kernel, SDPBackend
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
    job = f"attention_fwd b{B} h{H} s{S} d{D}{' causal' if causal else ''}"
    flops = 4 * B * H * S * S * D * (0.5 if causal else 1.0)
    F = torch.nn.functional.scaled_dot_product_attention
    with sdpa_kernel(SDPBackend.MATH):
        ref = F(q[:1].float(), k[:1].float(), v[:1].float(), is_causal=causal).double()
    for name, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION), ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                out = F(q, k, v, is_causal=causal)
                record(job, name, bench(lambda: F(q, k, v, is_causal=causal)), flops, err=rel_err(out[:1], ref))
        except Exception as e:  # noqa: BLE001
            RESULTS.append({"job": job, "impl": name, "error": str(e)[:200]})
    tk = triton_kernels()
    if tk is not None:
        out = tk.flash_attention(q, k, v, causal)
        record(job, "triton", bench(lambda: tk.flash_attention(q, k, v, causal)), flops, err=rel_err(out[:1], ref))
    for cfg in configs:
        try:
            t0 = time.perf_counter()
            kern = fa.flash_attention(B, H, S, S, D, is_causal=causal, **cfg)
            ct = time.perf_counter() - t0
            out = kern(q, k, v)
            record(job, "tilelang", bench(lambda: kern(q, k, v)), flops, err=rel_err(out[:1], ref), config=cfg,
                   compile_s=ct)
        except Exception as e:  # noqa: BLE001
            RESULTS.append({"job": job, "impl": "tilelang", "config": cfg, "error": str(e)[:300]})


@guarded
def mla_decode(B=64, H=128, S=8192, dim=512, pe=64, configs=()):
    m = example("deepseek_mla", "mla_decode")
    q, q_pe, kv, k_pe = m.make_inputs(B, H, S, dim, pe, device="cuda")
    job = f"mla_decode b{B} h{H} kv{S} d{dim}+{pe}"
    flops = 2 * B * H * S * (dim + pe + dim)
    nbytes = (kv.numel() + k_pe.numel()) * 2
    ref = m.ref_program(q[:2], q_pe[:2], kv[:2], k_pe[:2]).double()
    # torch: two batched matmuls around a softmax (SDPA would expand the one latent head to all 128)
    qq = torch.cat([q, q_pe], -1)                           # [B, H, 576]
    kk = torch.cat([kv, k_pe], -1)                          # [B, S, 576]
    scale = (dim + pe) ** -0.5

    def tf():
        s = torch.bmm(qq, kk.transpose(1, 2)).float() * scale
        return torch.bmm(torch.softmax(s, -1).to(kv.dtype), kv)
    try:
        out = tf()
        record(job, "torch_bmm", bench(tf), flops, nbytes, err=rel_err(out[:2], ref))
    except Exception as e:  # noqa: BLE001
        RESULTS.append({"job": job, "impl": "torch_bmm", "error": str(e)[:200]})
    for cfg in configs:
        try:
            kern = m.mla_decode(B, H, S, dim, pe, **cfg)
            out = kern(q, q_pe, kv, k_pe)
            record(job, "tilelang", bench(lambda: kern(q, q_pe, kv, k_pe)), flops, nbytes,
                   err=rel_err(out[:2], ref), config=cfg)
        except Exception as e:  # noqa: BLE001
            RESULTS.append({"job": job, "impl": "tilelang", "config": cfg, "error": str(e)[:300]})


@guarded
def rowwise(M=16384, N=4096, configs=()):
    rn, sm = example("rms_norm"), example("softmax")
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.randn(N, device="cuda", dtype=torch.float16)
    nbytes = 2 * M * N * 2
    tk = triton_kernels()
    ref = rn.ref_program(x, w).double()
    job = f"rmsnorm fp16 {M}x{N}"
    tf = lambda: torch.nn.functional.rms_norm(x, (N,), w, 1e-6)  # noqa: E731
    record(job, "torch", bench(tf), nbytes=nbytes, err=rel_err(tf(), ref))
    if tk is not None:
        record(job, "triton", bench(lambda: tk.rmsnorm(x, w)), nbytes=nbytes, err=rel_err(tk.rmsnorm(x, w), ref))
    for cfg in configs:
        try:
            k = rn.rms_norm(M, N, dtype=T.float16, **cfg)
            record(job, "tilelang", bench(lambda: k(x, w)), nbytes=nbytes, err=rel_err(k(x, w), ref), config=cfg)
        except Exception as e:  # noqa: BLE001
            RESULTS.append({"job": job, "impl": "tilelang", "config": cfg, "error": str(e)[:300]})
    job = f"softmax fp16 {M}x{N}"
    ref = torch.softmax(x.double(), -1)
    record(job, "torch", bench(lambda: torch.softmax(x, -1)), nbytes=nbytes, err=rel_err(torch.softmax(x, -1), ref))
    if tk is not None:
        record(job, "triton", bench(lambda: tk.softmax(x)), nbytes=nbytes, err=rel_err(tk.softmax(x), ref))
    for cfg in configs:
        try:
            k = sm.softmax(M, N, dtype=T.float16, **cfg)
            record(job, "tilelang", bench(lambda: k(x)), nbytes=nbytes, err=rel_err(k(x), ref), config=cfg)
        except Exception as e:  # noqa: BLE001
            RESULTS.append({"job": job, "impl": "tilelang", "config": cfg, "error": str(e)[:300]})


@guarded
def add(n=2 ** 28, configs=()):
    ew = example("elementwise")
    M, N = n // 4096, 4096
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    b = torch.randn(M, N, device="cuda", dtype=torch.float16)
    nbytes = 3 * n * 2
    job = "add fp16 2^28"
    record(job, "torch", bench(lambda: a + b), nbytes=nbytes)
    tk = triton_kernels()
    if tk is not None:
        record(job, "triton", bench(lambda: tk.add(a, b)), nbytes=nbytes)
    for cfg in configs:
        try:
            k = ew.elementwise_add(M, N, in_dtype=T.float16, out_dtype=T.float16, **cfg)
            out = k(a, b)
            record(job, "tilelang", bench(lambda: k(a, b)), nbytes=nbytes, err=rel_err(out, a.double() + b.double()),
                   config=cfg)
        except Exception as e:  # noqa: BLE001
            RESULTS.append({"job": job, "impl": "tilelang", "config": cfg, "error": str(e)[:300]})


@guarded
def launch_overhead():
    @T.prim_func
    def tiny(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                A[i] = A[i] + 1.0
    k = tilelang.compile(tiny, target="cuda")
    a = torch.zeros(32, device="cuda")
    for _ in range(100):
        k(a)
    torch.cuda.synchronize()
    n = 20000
    t = time.perf_counter()
    for _ in range(n):
        k(a)
    torch.cuda.synchronize()
    ours = (time.perf_counter() - t) / n * 1e6
    t = time.perf_counter()
    for _ in range(n):
        a.add_(1.0)
    torch.cuda.synchronize()
    theirs = (time.perf_counter() - t) / n * 1e6
    RESULTS.append({"job": "launch overhead (host us per call, tiny kernel)", "impl": "tilelang", "us": ours})
    RESULTS.append({"job": "launch overhead (host us per call, tiny kernel)", "impl": "torch add_", "us": theirs})
    print("launch us", ours, theirs)


@guarded
def compile_times():
    g, fa = example("gemm"), example("flash_attention")
    tilelang.disable_cache()
    for name, make in (("gemm 4096 fp16", lambda: g.matmul(4096, 4096, 4096, 128, 128, 32)),
                       ("flash_attention d128", lambda: fa.flash_attention(1, 16, 4096, 4096, 128))):
        t = time.perf_counter()
        k = make()
        cold = time.perf_counter() - t
        RESULTS.append({"job": f"compile {name}", "impl": "tilelang", "cold_s": cold})
    tilelang.enable_cache()
    k = tilelang.compile(g.matmul.get_tir(1024, 1024, 1024, 128, 128, 32), out_idx=[-1])
    t = time.perf_counter()
    k = tilelang.compile(g.matmul.get_tir(1024, 1024, 1024, 128, 128, 32), out_idx=[-1])
    RESULTS.append({"job": "compile cache hit", "impl": "tilelang", "ms": (time.perf_counter() - t) * 1e3})


def summary_md(meta):
    lines = [f"# Benchmark suite — {meta['date']} — {meta['device']} — commit {meta['commit'][:10]}", "",
             "| job | impl | ms | TFLOP/s | GB/s | rel err | config | note |", "|---|---|---|---|---|---|---|---|"]
    for r in RESULTS:
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} |".format(
            r.get("job"), r.get("impl"), f"{r['ms']:.4f}" if "ms" in r else "",
            f"{r['tflops']:.1f}" if "tflops" in r else "", f"{r['gbps']:.0f}" if "gbps" in r else "",
            f"{r['rel_err']:.1e}" if "rel_err" in r else "", r.get("config", ""),
            r.get("error", "") or (f"{r['us']:.2f} us" if "us" in r else "") or
            (f"{r['cold_s']:.3f} s cold" if "cold_s" in r else "")))
    return "\n".join(lines) + "\n"


META = {}


def flush():
    out = pathlib.Path(os.environ.get("OUT", ROOT / "bench_out"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "suite.json").write_text(json.dumps({"meta": META, "results": RESULTS}, indent=1, default=str))
    (out / "suite.md").write_text(summary_md(META))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))

    def want(n):
        flush()
        return not only or n in only
    commit = os.environ.get("TL_COMMIT", "")   # the device machine's copy may carry a stale .git
    try:
        commit = commit or subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                          cwd=ROOT).stdout.strip()
    except Exception:  # noqa: BLE001
        commit = ""
    if len(commit) != 40:  # not a git checkout (the device machine gets a copy of the tree)
        commit = os.environ.get("TL_COMMIT", "unknown")
    META.update({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "device": torch.cuda.get_device_name(0),
                 "commit": commit, "torch": torch.__version__})
    gcfg = [dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256),
            dict(block_M=128, block_N=256, block_K=32, num_stages=4, threads=256),
            dict(block_M=128, block_N=128, block_K=64, num_stages=4, threads=256)]
    acfg = [dict(block_M=128, block_N=128, num_stages=2, threads=256),
            dict(block_M=128, block_N=64, num_stages=2, threads=256),
            dict(block_M=64, block_N=64, num_stages=1, threads=128)]
    if want("copy"):
        copy_bandwidth()
    if want("gemm"):
        gemm(8192, 8192, 8192, "float16", configs=gcfg[:2] if args.quick else gcfg)
        gemm(4096, 4096, 4096, "bfloat16", configs=gcfg)
        gemm(4096, 4096, 4096, "bfloat16", trans_b=True, relu=True, configs=gcfg)
    if want("attention"):
        for causal in (False, True):
            attention(8, 16, 4096, 128, causal, configs=acfg)
        attention(16, 16, 2048, 64, False, configs=acfg)
    if want("rowwise"):
        rowwise(configs=[dict(block_M=1, block_N=4096, threads=256), dict(block_M=4, block_N=1024, threads=256)])
    if want("add"):
        add(configs=[dict(block_M=32, block_N=256, threads=256), dict(block_M=16, block_N=512, threads=256)])
    if want("launch"):
        launch_overhead()
    if want("compile"):
        compile_times()
    if want("mla"):
        mla_decode(configs=[dict(block_H=64, block_N=32, num_split=16, threads=256)])
    flush()
    print(summary_md(META))


if __name__ == "__main__":
    main()
