"""The CUDA issue's FlashAttention cases with the tuned config, against SDPA (cuDNN and
flash backends), on the GPU, in one process. `VARIANTS="TILELANG_CUDA_TMA_RING=0;"`
compiles and times each case once per environment setting (`;`-separated, `,` between
variables), so that a code-generation switch is compared in the same run; cuDNN is
timed again after each of ours (clocks drift under load) and the ratio takes the faster
of its two timings. `CASES=128` keeps the head-dim-128 cases."""
import json
import os
import pathlib
import sys

import torch
from torch.nn.attention import sdpa_kernel, SDPBackend

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import tilelang  # noqa: E402
from tilelang.profiler import do_bench  # noqa: E402
from bench_suite import example  # noqa: E402  (benchmarks/ is on the path: scripts run from it)

fa = example("flash_attention")
cfg = dict(block_M=128, block_N=128, num_stages=2, threads=256)
variants = [dict(kv.split("=", 1) for kv in v.split(",") if kv) for v in os.environ.get("VARIANTS", "").split(";")]
cases = ((8, 16, 4096, 128, False), (8, 16, 4096, 128, True), (16, 16, 2048, 64, False))
cases = [c for c in cases if not os.environ.get("CASES") or str(c[3]) in os.environ["CASES"].split(",")]
F = torch.nn.functional.scaled_dot_product_attention
out = []
for B, H, S, D, causal in cases:
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
    with sdpa_kernel(SDPBackend.MATH):
        ref = F(q[:1].float(), k[:1].float(), v[:1].float(), is_causal=causal)
    flops = 4 * B * H * S * S * D * (0.5 if causal else 1.0)

    def sdpa(backend):
        with sdpa_kernel(backend):
            return do_bench(lambda: F(q, k, v, is_causal=causal), return_mode="median")
    t_flash = sdpa(SDPBackend.FLASH_ATTENTION)
    t_cudnn = sdpa(SDPBackend.CUDNN_ATTENTION)
    for var in variants:
        old = {key: os.environ.get(key) for key in var}
        os.environ.update(var)
        try:
            kern = fa.flash_attention(B, H, S, S, D, is_causal=causal, **cfg)
            o = kern(q, k, v)
        except Exception as e:  # noqa: BLE001 - a variant that does not compile is reported, the rest still run
            print(json.dumps(dict(b=B, h=H, s=S, d=D, causal=causal, env=var, error=f"{type(e).__name__}: {e}"[:400])),
                  flush=True)
            continue
        finally:
            for key, val in old.items():
                if val is None:
                    os.environ.pop(key)
                else:
                    os.environ[key] = val
        err = float((o[:1].float() - ref).norm() / ref.norm())
        t = do_bench(lambda: kern(q, k, v), return_mode="median")
        t_cudnn2 = sdpa(SDPBackend.CUDNN_ATTENTION)
        r = dict(b=B, h=H, s=S, d=D, causal=causal, env=var, ms=t, cudnn_ms=t_cudnn, cudnn_ms_after=t_cudnn2,
                 flash_ms=t_flash, ratio=min(t_cudnn, t_cudnn2) / t, tflops=flops / t / 1e9, rel_err=err,
                 config=cfg, commit=os.environ.get("TL_COMMIT"))
        out.append(r)
        print(json.dumps(r), flush=True)
if os.environ.get("OUT"):
    pathlib.Path(os.environ["OUT"], "attention_cases.json").write_text(json.dumps(out, indent=1))
