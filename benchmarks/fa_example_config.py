"""FlashAttention forward at the published example's own configuration (`flash_attention/
example_mha_fwd_bshd.py` main(): b8 h32 s4096 d128, 128 x 128 tiles, one stage, 128 threads),
under whichever `tilelang` is first on PYTHONPATH (ours or the published package), causal and
not: max error against torch, kernel time by CUPTI and by events. Run it from outside this
repository's root (a script's own folder comes first on sys.path), once per package / switch:

  VARIANT=ours PYTHONPATH=<repo> python /tmp/fa_example_config.py --examples <tilelang>/examples
  VARIANT=published PYTHONPATH=<published package> python /tmp/fa_example_config.py --examples ...

Prints one `RESULT <variant> causal=<c> ...` line per case."""
import argparse
import importlib.util
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", required=True, help="the published repository's examples/ folder")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=128)
    args = ap.parse_args()
    import torch
    import tilelang
    from tilelang.profiler import do_bench
    path = os.path.join(args.examples, "flash_attention", "example_mha_fwd_bshd.py")
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("fa_example_config_mod", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    variant = os.environ.get("VARIANT", "ours")
    B, H, S, D = args.batch, args.heads, args.seq, args.dim
    for causal in (False, True):
        kernel = ex.flashattn(B, H, S, D, causal, block_M=128, block_N=128, num_stages=1, threads=128)
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(3))
        err = (kernel(q, k, v).float() - ex.ref_program(q, k, v, causal).float()).abs().max().item()
        flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1)
        ms_c = do_bench(lambda: kernel(q, k, v), backend="cupti")
        ms_e = do_bench(lambda: kernel(q, k, v), warmup=200)
        print(f"RESULT {variant} causal={causal} maxerr={err:.4f} cupti {ms_c:.4f} ms {flops / ms_c * 1e-9:.1f} "
              f"TFLOPS event {ms_e:.4f} ms {flops / ms_e * 1e-9:.1f} TFLOPS ({tilelang.__file__})", flush=True)


if __name__ == "__main__":
    main()
