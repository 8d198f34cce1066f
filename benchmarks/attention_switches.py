"""FlashAttention forward (the bench_suite shapes and tuned config) and MLA decode (the
published example's default: b1 h128 kv8192 d512+64) against torch, once per value of the
attention code-generation switches, in one process; prints one table.

    python benchmarks/attention_switches.py            # about a minute on the H200

Switches compared (each row: the environment it was compiled under):
  TILELANG_CUDA_WS_ATTENTION=1  a producer warpgroup feeds the loop (plan/attention_warp_specialize.py)
  TILELANG_CUDA_PINGPONG=1      the two warpgroups take turns at the first gemm (single-role ring)
  TILELANG_CUDA_OVERLAP_GEMM=1  P V of iteration k - 1 runs during iteration k's softmax (plan/overlap.py):
                                K and V on two TMA rings, the softmax pinned ahead of the wait for P V;
                                with ..._PINGPONG=1 the warpgroups take turns at both issues, with
                                ..._OVERLAP_DEFER=0 O's rescale stays in its own iteration, with
                                ..._WGMMA_WAIT_PIN=0 unpinned, with ..._OVERLAP_RING=0 on cp.async
FlashAttention's ratio is against SDPA's cuDNN backend (timed before and after ours, the
faster one), MLA decode's against torch's bmm-softmax-bmm. Every result is checked."""
import os
import sys
import pathlib

import torch
from torch.nn.attention import sdpa_kernel, SDPBackend

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from tilelang.profiler import do_bench  # noqa: E402
from bench_suite import example  # noqa: E402
from tests.backend.cuda.kernels_mla import mla_decode_no_split, reference as mla_reference  # noqa: E402

OV = "TILELANG_CUDA_OVERLAP_GEMM"
FA_VARIANTS = [{}, {"TILELANG_CUDA_WS_ATTENTION": "1"}, {"TILELANG_CUDA_PINGPONG": "1"}, {OV: "1"},
               {OV: "1", "TILELANG_CUDA_PINGPONG": "1"}, {OV: "1", "TILELANG_CUDA_OVERLAP_DEFER": "0"},
               {OV: "1", "TILELANG_CUDA_WGMMA_WAIT_PIN": "0"}, {OV: "1", "TILELANG_CUDA_OVERLAP_RING": "0"}]
MLA_VARIANTS = [{}, {"TILELANG_CUDA_WS_ATTENTION": "1"}]
CFG = dict(block_M=128, block_N=128, num_stages=2, threads=256)
F = torch.nn.functional.scaled_dot_product_attention


def bench(fn):
    return do_bench(fn, warmup=10, rep=50, return_mode="median")


def compiled_under(env, make):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return make()
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def flash_rows(fa):
    for B, H, S, D, causal in ((8, 16, 4096, 128, False), (8, 16, 4096, 128, True), (16, 16, 2048, 64, False)):
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
        with sdpa_kernel(SDPBackend.MATH):
            ref = F(q[:1].float(), k[:1].float(), v[:1].float(), is_causal=causal)
        flops = 4 * B * H * S * S * D * (0.5 if causal else 1.0)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return bench(lambda: F(q, k, v, is_causal=causal))
        before = cudnn()
        for env in FA_VARIANTS:
            kern = compiled_under(env, lambda: fa.flash_attention(B, H, S, S, D, is_causal=causal, **CFG))
            err = float((kern(q, k, v)[:1].float() - ref).norm() / ref.norm())
            ms = bench(lambda: kern(q, k, v))
            base = min(before, cudnn())
            yield (f"FA fwd b{B} h{H} s{S} d{D}{' causal' if causal else ''}", env, ms, flops / ms / 1e9, "cuDNN",
                   base, base / ms, err)


def mla_rows():
    b, h, s, d, pe = 1, 128, 8192, 512, 64
    torch.manual_seed(0)
    q = torch.randn(b, h, d, device="cuda", dtype=torch.float16)
    qp = torch.randn(b, h, pe, device="cuda", dtype=torch.float16)
    kv = torch.randn(b, s, 1, d, device="cuda", dtype=torch.float16)
    kp = torch.randn(b, s, 1, pe, device="cuda", dtype=torch.float16)
    qf, kf, vf = torch.cat([q, qp], -1), torch.cat([kv, kp], -1)[:, :, 0], kv[:, :, 0]

    def torch_mla():
        return torch.bmm(torch.softmax(torch.bmm(qf, kf.transpose(1, 2)).float() * (d + pe) ** -0.5, -1).half(), vf)
    base = bench(torch_mla)
    ref = mla_reference(q, qp, kv, kp)
    flops = 2 * b * h * s * (d + pe + d)
    import tilelang
    for env in MLA_VARIANTS:
        kern = compiled_under(env, lambda: tilelang.compile(mla_decode_no_split(b, h, s, d, pe), out_idx=[4],
                                                            target="cuda"))
        err = float((kern(q, qp, kv, kp).float() - ref).norm() / ref.norm())
        ms = bench(lambda: kern(q, qp, kv, kp))
        yield (f"MLA decode b{b} h{h} kv{s} d{d}+{pe}", env, ms, flops / ms / 1e9, "torch", base, base / ms, err)


def main():
    fa = example("flash_attention")
    print("| case | switches | ms | TFLOP/s | vs | their ms | ratio | rel err |")
    print("|---|---|---|---|---|---|---|---|")
    for case, env, ms, tf, who, base, ratio, err in list(flash_rows(fa)) + list(mla_rows()):
        sw = ",".join(f"{k.replace('TILELANG_CUDA_', '')}={v}" for k, v in env.items()) or "defaults"
        print(f"| {case} | {sw} | {ms:.4f} | {tf:.1f} | {who} | {base:.4f} | {ratio:.3f} | {err:.1e} |", flush=True)


if __name__ == "__main__":
    main()
