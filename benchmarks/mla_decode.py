"""MLA decode (the published deepseek_mla decode structure, tests/backend/cuda/kernels_mla.py)
on the GPU: latency at b1 and b64, h128, kv8192, d 512 + 64, with the KV loop on the TMA
ring (with and without TILELANG_CUDA_TMA_L2_PREFETCH) and on cp.async (TILELANG_CUDA_TMA_RING=0), each
checked against the torch reference; at the default ring also with TILELANG_CUDA_COVERED_BARRIERS=0
and/or the opt-in TILELANG_CUDA_WGMMA_UNIFORM_WG=1 (the A/B of the consumer-loop changes), and with
the opt-in TILELANG_CUDA_PTXAS_OPT_LEVEL=1 (ptxas -O1: a quarter less ptxas time, other SASS).

    python benchmarks/mla_decode.py

The published example's own figure comes from its regression entry point, run from a copy
of examples/deepseek_mla with this package on PYTHONPATH:
`python regression_example_mla_decode.py`."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tilelang  # noqa: E402
from tilelang.profiler import do_bench  # noqa: E402
from tests.backend.cuda.kernels_mla import mla_decode_no_split, reference  # noqa: E402


# A/B switches of the consumer loop measured at the default ring: the barrier at its top
# (TILELANG_CUDA_COVERED_BARRIERS) and the wgmma descriptors' registers (..._WGMMA_UNIFORM_WG); ptxas -O1
# (..._PTXAS_OPT_LEVEL, a faster compile: the kernel time it costs, if any)
SWITCHES = ("TILELANG_CUDA_COVERED_BARRIERS", "TILELANG_CUDA_WGMMA_UNIFORM_WG", "TILELANG_CUDA_PTXAS_OPT_LEVEL")
# (covered barriers on by default, the uniform index opt-in: each variant names what it changes)
VARIANTS = [("1", "0", {}), ("1", "0", {SWITCHES[0]: "0"}), ("1", "0", {SWITCHES[1]: "1"}),
            ("1", "0", {SWITCHES[0]: "0", SWITCHES[1]: "1"}), ("1", "0", {SWITCHES[2]: "1"}),
            ("1", "1", {}), ("1", "2", {}), ("1", "4", {}), ("0", "0", {})]


def main(batches=(1, 64), heads=128, seqlen_kv=8192, dim=512, pe_dim=64):
    for ring, ahead, switches in VARIANTS:
        os.environ["TILELANG_CUDA_TMA_RING"] = ring
        os.environ["TILELANG_CUDA_TMA_L2_PREFETCH"] = ahead
        for name in SWITCHES:   # a switch the variant does not name keeps its default
            if name in switches:
                os.environ[name] = switches[name]
            else:
                os.environ.pop(name, None)
        tag = "".join(f" {n[len('TILELANG_CUDA_'):]}={v}" for n, v in switches.items())
        for b in batches:
            k = tilelang.compile(mla_decode_no_split(b, heads, seqlen_kv, dim, pe_dim), out_idx=[4], target="cuda")
            torch.manual_seed(0)
            q = torch.randn(b, heads, dim, device="cuda", dtype=torch.float16)
            qp = torch.randn(b, heads, pe_dim, device="cuda", dtype=torch.float16)
            kv = torch.randn(b, seqlen_kv, 1, dim, device="cuda", dtype=torch.float16)
            kp = torch.randn(b, seqlen_kv, 1, pe_dim, device="cuda", dtype=torch.float16)
            err = (k(q, qp, kv, kp).float() - reference(q, qp, kv, kp)).abs().max().item()
            ms = do_bench(lambda: k(q, qp, kv, kp), warmup=50, rep=200)
            print(f"MLA decode b{b} h{heads} kv{seqlen_kv} TMA ring={ring} L2 prefetch={ahead}{tag}: {ms:.4f} ms  max|err| {err:.2e}",
                  flush=True)


if __name__ == "__main__":
    main()
