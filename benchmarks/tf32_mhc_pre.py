"""Issue 17 on the GPU: the TF32 gemm of DeepSeek mHC's pre block. Runs the published
example's own check (`example_mhc_pre.test`) and times `mhc_pre_gemm_sqrsum_tilelang`, the fused
rest `mhc_pre_big_fuse_tilelang` (each alone) and the whole regression step (`run_regression_perf`: gemm+sqrsum then the fused rest) at the
regression configuration (n=2048, hidden 4096, hc_mult 4), next to torch's TF32 matmul of the
same operands. Usage: python benchmarks/tf32_mhc_pre.py <dir with example_mhc_pre.py> [out.json]"""
import json
import sys
import time


def main(example_dir, out=None):
    sys.path.insert(0, example_dir)
    import torch
    import example_mhc_pre as ex
    from tilelang.profiler import do_bench
    res = {"device": torch.cuda.get_device_name()}
    t = time.time()
    for n, hidden in ((512, 1280), (2048, 4096)):
        ex.test(n=n, hidden_size=hidden, hc_mult=4)
    res["example_check_s"] = round(time.time() - t, 1)
    res["regression_step_ms"] = ex.run_regression_perf()
    d = ex.generate_test_data(n=2048, hc_mult=4, hidden_size=4096)
    x = d["residual"].view(2048, 4 * 4096)
    fn = d["fn"]
    out_t = torch.empty(2048, 24, device="cuda")
    sq = torch.empty(2048, device="cuda")
    run = lambda: ex.mhc_pre_gemm_sqrsum_tilelang(x, fn, out_t, sq, 24, 4 * 4096)  # noqa: E731
    run()
    res["gemm_sqrsum_ms"] = do_bench(run)
    ref = x.float() @ fn.T
    res["gemm_max_rel_err"] = float((out_t - ref).abs().max() / ref.abs().max())
    # the fused rest alone (post / comb mix, Sinkhorn, the mixed layer input), on the gemm's outputs
    post = torch.empty(2048, 4, device="cuda")
    comb = torch.empty(2048, 16, device="cuda")
    layer = torch.empty(2048, 4096, dtype=torch.bfloat16, device="cuda")
    fuse = lambda: ex.mhc_pre_big_fuse_tilelang(  # noqa: E731
        out_t.unsqueeze(0), sq.unsqueeze(0), d["hc_scale"], d["hc_base"], d["residual"], post, comb, layer,
        4096, d["rms_eps"], d["hc_pre_eps"], d["hc_sinkhorn_eps"], d["hc_post_mult_value"], d["sinkhorn_repeat"], 1, 4)
    fuse()
    res["big_fuse_ms"] = do_bench(fuse)
    torch.backends.cuda.matmul.allow_tf32 = True
    xf = x.float()
    res["torch_tf32_matmul_ms"] = do_bench(lambda: xf @ fn.T)
    print(json.dumps(res, indent=1))
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
