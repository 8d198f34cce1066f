"""Issue 17: each kernel of DeepSeek mHC's pre block alone, timed with CUDA events (ours only),
at the published regression configuration (n=2048, hidden 4096, hc_mult 4, n_splits 1):
`mhc_pre_gemm_sqrsum_tilelang` (64 blocks of 32 tokens: TF32 gemm + sum of squares), then
`mhc_pre_big_fuse_tilelang` (2048 blocks of 96 threads), then both as `run_regression_perf` runs them.
Usage: python benchmarks/mhc_pre_kernels.py <dir with example_mhc_pre.py> [out.json]"""
import json
import sys


def event_ms(fn, warmup=20, reps=200):
    import torch
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def main(example_dir, out=None):
    sys.path.insert(0, example_dir)
    import torch
    import example_mhc_pre as ex
    n, hidden, hc = 2048, 4096, 4
    hc3 = hc * 2 + hc * hc
    d = ex.generate_test_data(n=n, hc_mult=hc, hidden_size=hidden)
    x = d["residual"].view(n, hc * hidden)
    mul = torch.empty(1, n, hc3, device="cuda")
    sq = torch.empty(1, n, device="cuda")
    post = torch.empty(n, hc, device="cuda")
    comb = torch.empty(n, hc * hc, device="cuda")
    layer = torch.empty(n, hidden, dtype=torch.bfloat16, device="cuda")

    def gemm():
        ex.mhc_pre_gemm_sqrsum_tilelang(x, d["fn"], mul.squeeze(0), sq.squeeze(0), hc3, hc * hidden)

    def fuse():
        ex.mhc_pre_big_fuse_tilelang(mul, sq, d["hc_scale"], d["hc_base"], d["residual"], post, comb, layer, hidden,
                                     d["rms_eps"], d["hc_pre_eps"], d["hc_sinkhorn_eps"], d["hc_post_mult_value"],
                                     d["sinkhorn_repeat"], 1, hc)

    def both():
        gemm()
        fuse()

    res = {"device": torch.cuda.get_device_name(), "gemm_sqrsum_ms": event_ms(gemm), "big_fuse_ms": event_ms(fuse),
           "both_ms": event_ms(both)}
    # the bytes each kernel must move, for the bandwidth it reached
    res["gemm_sqrsum_GBps"] = (x.numel() * 2 + n * (hc3 + 1) * 4) / res["gemm_sqrsum_ms"] / 1e6
    res["big_fuse_GBps"] = (x.numel() * 2 + layer.numel() * 2) / res["big_fuse_ms"] / 1e6
    print(json.dumps(res, indent=1))
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
