"""`T.gemm` on 32-bit float operands (float32 / tfloat32, float32 accumulator) on CUDA:
TF32 tensor cores (mma.sync m16n8k8 .tf32, `tl::gemm_ss_tf32`; ops/mma.py), ldmatrix for
K-major operands, one 32-bit load per register for M/N-major ones; the SIMT fallback
truncates its operands as the tensor cores do. Checked in the plan, the source and the SASS
here; on the GPU against a float64 reference of the tf32-truncated inputs."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.tf32 import tf32
from tilelang.backend.cuda.host.nvrtc import sass


def f32_gemm(M, N, K, bm=64, bn=64, bk=32, dtype="float32", trans_A=False, trans_B=False, threads=128, stages=2):
    a_shape, b_shape = ((K, M) if trans_A else (M, K)), ((N, K) if trans_B else (K, N))
    as_shape, bs_shape = ((bk, bm) if trans_A else (bm, bk)), ((bn, bk) if trans_B else (bk, bn))

    @T.prim_func
    def main(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            As = T.alloc_shared(as_shape, dtype)
            Bs = T.alloc_shared(bs_shape, dtype)
            Cf = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cf)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                if trans_A:
                    T.copy(A[k * bk, by * bm], As)
                else:
                    T.copy(A[by * bm, k * bk], As)
                if trans_B:
                    T.copy(B[bx * bn, k * bk], Bs)
                else:
                    T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cf, transpose_A=trans_A, transpose_B=trans_B)
            T.copy(Cf, C[by * bm, bx * bn])
    return main


def bf16_rows_times_tf32(tokens, width, outs=32, block=32, kblock=256):
    """The shape of DeepSeek mHC's pre-gemm: a bf16 tile widened into a tfloat32 fragment,
    times a tfloat32 weight tile stored N x K (transpose_B), plus a per-row sum of squares."""
    @T.prim_func
    def main(x: T.Tensor((tokens, width), "bfloat16"), w: T.Tensor((outs, width), "tfloat32"),
             y: T.Tensor((tokens, outs), "float32"), sq: T.Tensor((tokens,), "float32")):
        with T.Kernel(T.ceildiv(tokens, block)) as bx:
            acc = T.alloc_fragment((block, outs), "float32")
            part = T.alloc_fragment((block, 4), "float32")
            T.clear(acc)
            T.clear(part)
            for kb in T.Pipelined(width // kblock, num_stages=2):
                xs = T.alloc_shared((block, kblock), "bfloat16")
                ws = T.alloc_shared((outs, kblock), "tfloat32")
                T.copy(x[bx * block, kb * kblock], xs)
                T.copy(w[0, kb * kblock], ws)
                x16 = T.alloc_fragment((block, kblock), "bfloat16")
                T.copy(xs, x16)
                xf = T.alloc_fragment((block, kblock), "tfloat32")
                T.copy(x16, xf)
                for q in T.serial(kblock // 4):
                    for i, j in T.Parallel(block, 4):
                        part[i, j] += xf[i, q * 4 + j] * xf[i, q * 4 + j]
                T.gemm(xf, ws, acc, transpose_B=True)
            rows = T.alloc_fragment(block, "float32")
            T.reduce_sum(part, rows)
            for i in T.Parallel(block):
                sq[bx * block + i] = rows[i]
            T.copy(acc, y[bx * block, 0])
    return main


def _tf32_mma_ops(art):
    return len(re.findall(r"HMMA\.1688\.F32\.TF32", sass(art.binary)))


@needs_nvrtc
@pytest.mark.parametrize("dtype", ["float32", "tfloat32"])
@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False), (True, True)])
def test_f32_gemm_takes_the_tf32_mma(dtype, trans_A, trans_B, tmp_path, monkeypatch):
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path))
    art = build(f32_gemm(256, 256, 256, dtype=dtype, trans_A=trans_A, trans_B=trans_B), "sm_80")
    ta, tb = str(trans_A).lower(), str(trans_B).lower()
    assert f"tl::gemm_ss_tf32<64, 64, 32, 2, 2, {ta}, {tb}>" in art.source
    plan = next(p for p in tmp_path.iterdir() if "_cuda_plan_" in p.name).read_text()
    assert "mma.sync m16n8k8 .tf32, warps 2 x 2, accumulate in float32" in plan


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("trans_A,trans_B", [(False, True), (True, False)])
def test_tf32_sass_has_tf32_hmma_and_no_spills(arch, trans_A, trans_B):
    art = build(f32_gemm(256, 256, 256, trans_A=trans_A, trans_B=trans_B), arch)
    ops = sass_ops(art)
    # per warp and k8 step: 2 A atoms x 4 n8 pieces; 4 k8 steps per bk=32 tile
    assert _tf32_mma_ops(art) >= 2 * 4 * 4, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops
    # ldmatrix only for the K-major operands (A stored M x K, B stored N x K)
    assert (ops["LDSM"] > 0) == (not trans_A or trans_B), ops


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_bf16_to_tf32_fragment_gemm_on_tensor_cores(arch):
    art = build(bf16_rows_times_tf32(256, 1024), arch)
    # the widened tile is the register A operand (layout/fragment.py Tf32ALayout)
    assert "tl::gemm_rs_tf32<32, 32, 256, 2, 2, true, 2>(xf, " in art.source
    assert "gk" not in art.source   # no SIMT loop
    ops = sass_ops(art)
    assert _tf32_mma_ops(art) > 0 and ops["LDSM"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0, ops


@needs_nvrtc
def test_simt_fallback_truncates_operands_like_the_tensor_cores():
    # K = 12 is not a multiple of the mma's k8: the SIMT loop, reading tf32 values
    art = build(f32_gemm(64, 64, 12, bk=12), "sm_80")
    assert "gemm_ss_tf32" not in art.source and "tl::tf32_trunc(" in art.source
    # float16 operands are not touched
    assert "tf32_trunc" not in build(f32_gemm(64, 64, 12, bk=12, dtype="float16"), "sm_80").source


def _inputs(M, N, K, trans_A, trans_B, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    return a, b, (a.T.copy() if trans_A else a), (b.T.copy() if trans_B else b)


def _reference(a, b):
    return tf32(a).astype(np.float64) @ tf32(b).astype(np.float64)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "tfloat32"])
@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False), (True, True)])
def test_gpu_tf32_gemm_matches_the_tf32_reference(dtype, trans_A, trans_B):
    import torch
    M, N, K = 256, 192, 320
    a, b, A, B = _inputs(M, N, K, trans_A, trans_B)
    kern = tilelang.compile(f32_gemm(M, N, K, dtype=dtype, trans_A=trans_A, trans_B=trans_B), target="cuda")
    assert "gemm_ss_tf32" in kern.get_kernel_source()
    c = torch.zeros(M, N, device="cuda")
    kern(torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda(), c)
    ref = _reference(a, b)
    # same products as the reference (truncated operands); only the float32 sums differ
    np.testing.assert_allclose(c.cpu().numpy(), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    # and torch's own TF32 matmul agrees within tf32 tolerance
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        t = torch.from_numpy(a).cuda() @ torch.from_numpy(b).cuda()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
    torch.testing.assert_close(c, t, rtol=1e-2, atol=2e-2 * float(t.abs().max()))


@pytest.mark.gpu
def test_gpu_bf16_to_tf32_fragment_gemm_matches_cpu():
    import torch
    tokens, width = 200, 1024    # a partial last block of tokens
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.standard_normal((tokens, width)).astype(np.float32)).bfloat16()
    w = torch.from_numpy((rng.standard_normal((32, width)) * 1e-2).astype(np.float32))
    outs = {}
    for target in ("cpu", "cuda"):
        dev = "cuda" if target == "cuda" else "cpu"
        y = torch.zeros(tokens, 32, device=dev)
        sq = torch.zeros(tokens, device=dev)
        tilelang.compile(bf16_rows_times_tf32(tokens, width), target=target)(x.to(dev), w.to(dev), y, sq)
        outs[target] = (y.cpu(), sq.cpu())
    ref = x.double() @ torch.from_numpy(tf32(w.numpy())).double().T
    for y, sq in outs.values():
        torch.testing.assert_close(y.double(), ref, rtol=1e-4, atol=1e-4 * float(ref.abs().max()))
        torch.testing.assert_close(sq.double(), x.double().square().sum(1), rtol=1e-4, atol=1e-3)


def register_a_gemm(M, N, K, bm=64, bn=64, bk=32, trans_B=False, threads=128):
    """A float32 gemm whose A tile is a register fragment loaded from global memory (the
    TF32 mma.sync's register A operand, `tl::gemm_rs_tf32`), B through shared memory."""
    b_shape, bs_shape = ((N, K), (bn, bk)) if trans_B else ((K, N), (bk, bn))

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor(b_shape, "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            Af = T.alloc_fragment((bm, bk), "float32")
            Bs = T.alloc_shared(bs_shape, "float32")
            Cf = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cf)
            for k in T.serial(T.ceildiv(K, bk)):
                T.copy(A[by * bm, k * bk], Af)
                if trans_B:
                    T.copy(B[bx * bn, k * bk], Bs)
                else:
                    T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(Af, Bs, Cf, transpose_B=trans_B)
            T.copy(Cf, C[by * bm, bx * bn])
    return main


@needs_sass
@pytest.mark.parametrize("trans_B", [False, True])
def test_register_a_tf32_gemm_compiles_without_spills(trans_B):
    art = build(register_a_gemm(128, 128, 128, trans_B=trans_B), "sm_90a")
    assert f"tl::gemm_rs_tf32<64, 64, 32, 2, 2, {str(trans_B).lower()}>(Af, " in art.source
    ops = sass_ops(art)
    assert _tf32_mma_ops(art) >= 4 * 4 and ops["LDL"] == 0 and ops["STL"] == 0, ops


@pytest.mark.gpu
@pytest.mark.parametrize("trans_B", [False, True])
def test_gpu_register_a_tf32_gemm_matches_torch(trans_B):
    import torch
    M, N, K = 192, 128, 160
    a, b, A, B = _inputs(M, N, K, False, trans_B, seed=2)
    kern = tilelang.compile(register_a_gemm(M, N, K, trans_B=trans_B), target="cuda")
    assert "gemm_rs_tf32" in kern.get_kernel_source()
    c = torch.zeros(M, N, device="cuda")
    kern(torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda(), c)
    ref = _reference(a, b)
    np.testing.assert_allclose(c.cpu().numpy(), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    t = torch.from_numpy(a).double() @ torch.from_numpy(b).double()
    torch.testing.assert_close(c.cpu().double(), t, rtol=1e-2, atol=2e-2 * float(t.abs().max()))
