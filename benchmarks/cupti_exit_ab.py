"""A/B of the abort at interpreter exit seen in processes timing with do_bench(backend="cupti")
(`free(): invalid pointer` / `double free or corruption` after every result was printed; see
benchmarks/results/README.md). Each worker process compiles three kernels (two GEMMs, an add) and
times each 8 times with CUPTI, then exits; the driver runs N of them per variant, PAR at once,
and counts exit codes:

  current               this package's do_bench (one profiler session a call after the first)
  single_session        one session a call with CPU + CUDA activities, the L2 flush annotated
                        with record_function (the published package's way)
  torch_only            torch matmuls timed the same way, no kernel of ours
  current_no_c_launch   as `current`, launches through ctypes (TILELANG_CUDA_C_LAUNCH=0)

  python benchmarks/cupti_exit_ab.py driver N PAR
"""
import os, subprocess, sys, time, collections

VARIANTS = ["current", "single_session", "torch_only", "current_no_c_launch"]

def worker(variant):
    import torch
    import tilelang, tilelang.language as T
    from tilelang.profiler import bench
    if variant == "single_session":
        def _bench_cupti(fn, n_warm, n_rep, flush, quantiles, return_mode):
            from torch.profiler import ProfilerActivity, profile, record_function
            for _ in range(n_warm):
                fn()
            torch.cuda.synchronize()
            n_rep = max(1, min(n_rep, 1000))
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
                for _ in range(n_rep):
                    with record_function("__tl_flush"):
                        flush.zero_()
                    fn()
                torch.cuda.synchronize()
            tot = fl = 0.0
            for e in p.key_averages():
                if e.key == "__tl_flush":
                    fl += float(e.device_time_total)
                elif e.device_type.name == "CUDA":
                    tot += float(getattr(e, "self_device_time_total", 0) or 0)
            return bench._summarize([(tot - fl) / n_rep / 1e3], quantiles, return_mode)
        bench._bench_cupti = _bench_cupti
    if variant == "torch_only":
        a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
        for i in range(24):
            t = bench.do_bench(lambda: a @ a, backend="cupti")
        print("torch_only", t)
        return

    def gemm(M, N, K, bm, bn, bk):
        @T.prim_func
        def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
            with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
                As = T.alloc_shared((bm, bk), "float16")
                Bs = T.alloc_shared((bk, bn), "float16")
                Cl = T.alloc_fragment((bm, bn), "float")
                T.clear(Cl)
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                    T.copy(A[by * bm, k * bk], As)
                    T.copy(B[k * bk, bx * bn], Bs)
                    T.gemm(As, Bs, Cl)
                T.copy(Cl, C[by * bm, bx * bn])
        return tilelang.compile(main, out_idx=[2])

    def add(N, blk):
        @T.prim_func
        def main(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16"), C: T.Tensor((N,), "float16")):
            with T.Kernel(T.ceildiv(N, blk), threads=256) as bx:
                for i in T.Parallel(blk):
                    C[bx * blk + i] = A[bx * blk + i] + B[bx * blk + i]
        return tilelang.compile(main, out_idx=[2])

    ks = [gemm(2048, 2048, 2048, 128, 128, 32), gemm(1024, 1024, 1024, 64, 64, 32), add(1 << 22, 1024)]
    for k in ks:
        prof = k.get_profiler()
        for i in range(8):
            t = prof.do_bench(backend="cupti")
    print(variant, "ok", t)

def driver(n, par):
    results = collections.defaultdict(collections.Counter)
    tails = {}
    for v in VARIANTS:
        env = dict(os.environ)
        if v == "current_no_c_launch":
            env["TILELANG_CUDA_C_LAUNCH"] = "0"
        procs, done = [], 0
        todo = list(range(n))
        t0 = time.time()
        while todo or procs:
            while todo and len(procs) < par:
                todo.pop()
                procs.append(subprocess.Popen([sys.executable, __file__, "worker", v], env=env,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            for p in list(procs):
                if p.poll() is not None:
                    out = p.stdout.read()
                    results[v][p.returncode] += 1
                    if p.returncode != 0:
                        tails.setdefault(v, out[-600:])
                    procs.remove(p)
            time.sleep(0.05)
        print(f"{v}: {dict(results[v])} in {time.time()-t0:.0f} s", flush=True)
    for v, t in tails.items():
        print("----", v, "\n", t)

if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker(sys.argv[2])
    else:
        driver(int(sys.argv[2]), int(sys.argv[3]))
