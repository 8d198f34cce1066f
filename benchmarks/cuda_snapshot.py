"""The generated CUDA of a fixed set of reference kernels, for sm_90a, without a GPU.

A change to the compiler that should not change code generation (a refactor, a pass
moved) is checked by writing the snapshot before and after and comparing:

    python benchmarks/cuda_snapshot.py --out /tmp/before          # on the old commit
    python benchmarks/cuda_snapshot.py --out /tmp/after --compare /tmp/before

Each kernel's source goes to <out>/<name>.cu; `--compare` prints the kernels whose
source differs (with a short unified diff) and exits 1 when any does. Kernels: the
repository's examples with the configurations the benchmarks use (GEMM 2-4 stages, NT,
FlashAttention causal and not, MLA decode, softmax, RMSNorm, elementwise), the CUDA
backend tests' kernels (warp-specialized GEMMs, row statistics, atomics, dynamic shapes, a
wgmma kept in flight on the TMA ring, with multicast pairs, the fp8 2xAcc GEMM, an im2col
convolution on cp.async).
"""
from __future__ import annotations

import argparse
import difflib
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def reference_kernels():
    """(name, thunk returning a PrimFunc) for every reference kernel."""
    import tilelang.language as T
    from bench_suite import example
    from tests.backend.cuda import kernels as K
    from tests.backend.cuda import kernels_ws as W
    g, fa = example("gemm"), example("flash_attention")
    out = []
    for st in (2, 3, 4):
        out.append((f"gemm_f16_128x256x64_s{st}", lambda st=st: g.matmul(
            4096, 4096, 4096, block_M=128, block_N=256, block_K=64, num_stages=st, threads=256)))
    out.append(("gemm_bf16_nt_relu", lambda: g.matmul(4096, 4096, 4096, trans_B=True, relu=True, dtype="bfloat16",
                                                      block_M=128, block_N=128, block_K=64, num_stages=4,
                                                      threads=256)))
    for causal in (False, True):
        out.append((f"flash_attention_{'causal' if causal else 'full'}", lambda c=causal: fa.flash_attention(
            8, 16, 4096, 4096, 128, is_causal=c, block_M=128, block_N=128, num_stages=2, threads=256)))
    out.append(("flash_attention_d64_s1", lambda: fa.flash_attention(16, 16, 2048, 2048, 64, is_causal=False,
                                                                    block_M=64, block_N=64, num_stages=1,
                                                                    threads=128)))
    mla = example("deepseek_mla", "mla_decode")
    out.append(("mla_decode", lambda: mla.mla_decode(64, 128, 8192, 512, 64, block_H=64, block_N=32, num_split=16,
                                                     threads=256)))
    rn, sm, ew = example("rms_norm"), example("softmax"), example("elementwise")
    out.append(("rms_norm", lambda: rn.rms_norm(16384, 4096, dtype=T.float16, block_M=1, block_N=4096,
                                                threads=256)))
    out.append(("softmax", lambda: sm.softmax(16384, 4096, dtype=T.float16, block_M=4, block_N=1024, threads=256)))
    out.append(("elementwise_add", lambda: ew.elementwise_add(8192, 8192, in_dtype=T.float16, out_dtype=T.float16,
                                                              block_M=32, block_N=256, threads=256)))
    out += [("t_elementwise_add", K.elementwise_add), ("t_copy_2d", K.copy_2d), ("t_gemm", K.gemm),
            ("t_softmax", K.softmax), ("t_row_sum_atomic", K.row_sum_atomic),
            ("t_scalar_and_dynamic", K.scalar_and_dynamic), ("t_gemm_row_stats", K.gemm_row_stats),
            ("t_ws_gemm", lambda: W.ws_gemm(512, 512, 512)), ("t_ws_cp_async_sum", lambda: W.ws_cp_async_sum(4096)),
            ("t_ws_gemm_tma", lambda: W.ws_gemm_tma(1024, 1024, 1024))]
    # the pipelining schedules besides the warp-specialized one: a wgmma group kept in flight on
    # the TMA ring (plain, multicast pairs, the fp8 2xAcc deferred wait) and on cp.async (im2col)
    from tests.backend.cuda.ops.test_wgmma_deferred_wait import two_acc_gemm
    from tests.backend.cuda.plan.test_cp_async_wgmma import conv, REGRESSION
    nows = {"tl.disable_warp_specialized": True}
    out += [("t_gemm_ring_in_flight", lambda: _compiled(K.gemm(1024, 1024, 512, bm=128, bn=256, bk=64, threads=256,
                                                                stages=3), nows)),
            ("t_gemm_multicast", lambda: _compiled(K.gemm(1024, 1024, 512, bm=128, bn=256, bk=64, threads=256,
                                                           stages=4), env={"TILELANG_CUDA_TMA_MULTICAST": "1"})),
            ("t_fp8_2xacc", lambda: two_acc_gemm(1024, 1024, 1024)),
            ("t_conv_cp_async_wgmma", lambda: conv(*REGRESSION, stages=3))]
    return out


def _compiled(func, pass_configs=None, env=None):
    """`func` compiled for sm_90a with `pass_configs` and the environment `env` (the options
    a compile reads once)."""
    import tilelang
    old = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        return tilelang.compile(func, target="cuda -arch=sm_90a", pass_configs=pass_configs)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _unwrap(k):
    """A PrimFunc from what an example returns (a PrimFunc, a JIT kernel or factory)."""
    from tilelang.ir.function import PrimFunc
    if isinstance(k, PrimFunc):
        return k
    for attr in ("prim_func", "func", "ir_module"):
        v = getattr(k, attr, None)
        if isinstance(v, PrimFunc):
            return v
    return k


def source_of(thunk, arch):
    import tilelang
    k = thunk()
    if hasattr(k, "get_kernel_source"):
        return k.get_kernel_source()
    return tilelang.compile(_unwrap(k), target=f"cuda -arch={arch}").get_kernel_source()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for <kernel>.cu files")
    ap.add_argument("--compare", help="a folder written earlier: report kernels whose source differs")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--only", nargs="*", help="kernel names to write (default: all)")
    args = ap.parse_args(argv)
    os.environ.setdefault("TILELANG_DISABLE_CACHE", "1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed, t0 = [], time.perf_counter()
    names = []
    for name, thunk in reference_kernels():
        if args.only and name not in args.only:
            continue
        names.append(name)
        try:
            src = source_of(thunk, args.arch)
        except Exception as e:  # noqa: BLE001 - a kernel that no longer compiles is a finding
            src = f"// FAILED: {type(e).__name__}: {e}\n"
            failed.append(name)
        (out / f"{name}.cu").write_text(src)
    print(f"{len(names)} kernels written to {out} in {time.perf_counter() - t0:.1f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    if not args.compare:
        return 1 if failed else 0
    differ = []
    for name in names:
        old_p = Path(args.compare) / f"{name}.cu"
        old = old_p.read_text() if old_p.exists() else ""
        new = (out / f"{name}.cu").read_text()
        if old != new:
            differ.append(name)
            diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"before/{name}.cu",
                                             f"after/{name}.cu", lineterm="", n=1))
            print("\n".join(diff[:40]) + ("\n..." if len(diff) > 40 else ""))
    print(f"{len(names) - len(differ)} of {len(names)} identical" + (f"; differ: {', '.join(differ)}" if differ else ""))
    return 1 if differ or failed else 0


if __name__ == "__main__":
    sys.exit(main())
