"""SASS counts of the published attention-backward examples' main kernels (their
`run_regression_perf` configurations), compiled for sm_90a with NVRTC, no GPU needed:

    python benchmarks/attention_bwd_sass.py [--examples .pub/examples] [--env NAME=VALUE ...]

For each kernel: HGMMA / HMMA (tensor-core instructions), BAR (block barriers), REDG (dQ
atomics), LDGSTS (cp.async), LDG (synchronous global loads), STL / LDL (local-memory spills)
and the instruction count, all static counts of the cubin. `--env` sets switches first
(e.g. `--env TILELANG_CUDA_CP_ASYNC_PRELOAD=0`) to compare both sides of an A/B switch.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (example file, the expression building its main kernel from the module `m`)
CASES = [
    ("flash_attention/example_mha_bwd_bhsd", "m.flashattn_bwd(1, 16, 512, 64, False, 64, 64)"),
    ("flash_attention/example_mha_bwd_bshd", "m.flashattn_bwd(1, 16, 512, 64, False, 64, 64)"),
    ("flash_attention/example_gqa_bwd", "m.flashattn_bwd_split(1, 32, 256, 192, 128, False, block_M=128, "
                                        "block_N=32, threads=256, num_stages=2, groups=16)"),
    ("attention_sink/example_gqa_sink_bwd_bhsd", "m.flashattn_bwd(1, 8, 512, 64, 2)"),
    ("attention_sink/example_gqa_sink_bwd_bhsd", "m.flashattn_bwd(1, 8, 512, 64, 2, window_size=128)"),
    ("attention_sink/example_mha_sink_bwd_bhsd", "m.flashattn_bwd(1, 32, 512, 128)"),
]
OPS = ["HGMMA", "HMMA", "BAR", "REDG", "LDGSTS", "LDG", "STL", "LDL"]


def counts(examples: Path, name: str, expr: str) -> dict:
    import torch
    from tests.backend.cuda.helpers import build
    from tilelang.backend.cuda.host.nvrtc import sass
    torch.cuda.get_device_capability = lambda *a: (9, 0)   # the examples pick their sm_90 configuration
    spec = importlib.util.spec_from_file_location(f"bwd_{name.replace('/', '_')}", examples / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    kernel = eval(expr, {"m": m})
    text = sass(build(getattr(kernel, "prim_func", kernel)).binary)
    ops = collections.Counter(re.findall(r"\b([A-Z][A-Z0-9]+)(?:\.[A-Za-z0-9_.]+)*\s", text))
    out = {k: ops[k] for k in OPS}
    out["instructions"] = sum(1 for ln in text.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", ln))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", default=str(ROOT / ".pub" / "examples"))
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE set before compiling")
    args = ap.parse_args()
    for kv in args.env:
        k, _, v = kv.partition("=")
        os.environ[k] = v
    print("| kernel | " + " | ".join(OPS) + " | instructions |")
    print("|---|" + "---|" * (len(OPS) + 1))
    for name, expr in CASES:
        c = counts(Path(args.examples), name, expr)
        label = name.split("/")[1] + (" (window 128)" if "window_size" in expr else "")
        print(f"| {label} | " + " | ".join(str(c[k]) for k in OPS) + f" | {c['instructions']} |")


if __name__ == "__main__":
    main()
