"""Autotuning on the GPU(s): the GEMM and FlashAttention examples over their search
spaces, with the reference check on. Records the chosen config and its speed, the
per-phase wall time (compile / check + benchmark), and which device measured each
candidate. Run once with CUDA_VISIBLE_DEVICES=0 and once with every GPU visible to
compare single- and multi-GPU tuning.

    python benchmarks/autotune_gpu.py --label 1gpu   -> $OUT/autotune_1gpu.json
    python benchmarks/autotune_gpu.py --strategy model --budget 0.33 --seed 0
    RAY_ADDRESS=head:6379 python benchmarks/autotune_gpu.py --executor ray
"""
import argparse
import importlib.util
import itertools
import json
import os
import pathlib
import sys
import tempfile
import time

os.environ["TILELANG_AUTO_TUNING_DISABLE_CACHE"] = "1"
os.environ.setdefault("TILELANG_DEFAULT_TARGET", "cuda")
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import tilelang  # noqa: E402
from tilelang.autotuner import AutoTuner  # noqa: E402


def example(name):
    path = ROOT / "examples" / name / f"example_{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def tune(name, factory, args, configs, ref, target="cuda", search=None):
    os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"tl_tune_{name}_")  # cold: every config compiles
    tuner = AutoTuner.from_kernel(factory, configs).set_kernel_parameters(args=args)
    tuner.set_compile_args(out_idx=factory.jit_kwargs.get("out_idx"), target=target)
    tuner.set_profile_args(ref_prog=ref, warmup=25, rep=100, timeout=60, rtol=2e-2, atol=2e-2)
    t0 = time.perf_counter()
    res = tuner.run(**(search or {}))
    wall = time.perf_counter() - t0
    recs = [dict(index=r.index, config=r.config, status=r.status, latency_ms=r.latency, compile_s=r.compile_time,
                 device=r.device, error=(r.error or "")[:200]) for r in res.records]
    compile_total = sum(r["compile_s"] or 0 for r in recs)
    devices = sorted({str(r["device"]) for r in recs if r["device"] is not None})
    out = dict(job=name, wall_s=wall, best_config=res.config, best_ms=res.latency, ref_ms=res.ref_latency,
               n_configs=len(configs), n_ok=sum(r["status"] == "ok" for r in recs),
               indices_measured=sorted(r["index"] for r in recs if r["latency_ms"] is not None),
               devices_used=devices, compile_cpu_s_sum=compile_total,
               phases=getattr(res, "phase_times", None), search=res.search, records=recs)
    print(json.dumps({k: v for k, v in out.items() if k != "records"}), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", default="run")
    ap.add_argument("--only", default="gemm,attention")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU (checks the script)")
    ap.add_argument("--strategy", default="exhaustive", choices=["exhaustive", "random", "halving", "model"])
    ap.add_argument("--budget", default=None, help="evaluations (an int) or a fraction of the space (0.33)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--executor", default="local", choices=["local", "ray"],
                    help="ray: compile and benchmark on the Ray cluster at RAY_ADDRESS (or a local one)")
    a = ap.parse_args()
    budget = None if a.budget is None else (float(a.budget) if "." in a.budget else int(a.budget))
    search = dict(strategy=a.strategy, budget=budget, seed=a.seed, executor=a.executor)
    tgt = "cpu" if a.smoke else "cuda"
    results = {"label": a.label, "search": search, "gpus": torch.cuda.device_count(),
               "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
               "date": time.strftime("%Y-%m-%d %H:%M:%S"), "commit": os.environ.get("TL_COMMIT", "unknown"),
               "jobs": []}
    if "gemm" in a.only:
        g = example("gemm")
        configs = [dict(block_M=128, block_N=bn, block_K=bk, num_stages=s, threads=t)
                   for bn, bk, s, t in itertools.product((128, 256), (32, 64), (3, 4), (128, 256))]
        size = (256, 256, 256) if a.smoke else (4096, 4096, 4096)
        configs = configs[:4] if a.smoke else configs
        results["jobs"].append(tune(f"gemm fp16 {size[0]}^3", g.matmul, size, configs,
                                    lambda A, B: (A.float() @ B.float()).half(), tgt, search))
    if "attention" in a.only:
        fa = example("flash_attention")
        configs = [dict(block_M=bm, block_N=bn, num_stages=s, threads=t)
                   for bm, bn, s, t in itertools.product((64, 128), (64, 128), (1, 2), (128, 256))]
        shape = (1, 2, 128, 128, 64) if a.smoke else (2, 16, 2048, 2048, 128)
        configs = configs[:3] if a.smoke else configs
        results["jobs"].append(tune("flash_attention b{} h{} s{} d{}".format(*shape[:3], shape[4]),
                                    fa.flash_attention, shape, configs,
                                    lambda Q, K, V: torch.nn.functional.scaled_dot_product_attention(
                                        Q.float(), K.float(), V.float()).to(Q.dtype), tgt, search))
    out = pathlib.Path(os.environ.get("OUT", ROOT / "bench_out"))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"autotune_{a.label}.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
