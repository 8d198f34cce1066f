"""FlashAttention forward on one warpgroup of 128 threads with 128 x 128 tiles and d = 128 (the
published `flash_attention/example_mha_fwd_bshd.py` main() configuration) runs its gemms on
mma.sync (wgmma's slabs would keep 256 accumulator registers live: plan/kernel.py
`_SLAB_CHAIN_REGS`; measured slower on the H200). Two planner decisions for that kernel:

- the P V gemm reads P (the first gemm's accumulator cast to 16 bits, in the accumulator
  pattern on a 4 x 1 warp grid) from registers (`tl::gemm_rs`, ops/mma.py `a_regs`) instead of
  a 32 KB shared round trip with its barrier (TILELANG_CUDA_MMA_RS=0: through shared memory);
- the output tile shares Q's storage after the loop (their lifetimes are disjoint), so two
  blocks fit an SM instead of one (plan/kernel.py `_share_for_occupancy`;
  TILELANG_CUDA_SMEM_SHARING_OCCUPANCY=0: each buffer its own storage).

Checked on the plan and, on a GPU, against torch."""
import dataclasses
import math

import pytest

import tilelang
import tilelang.language as T


def attention_fwd(batch=1, heads=2, seq=512, dim=128, block_M=128, block_N=128, threads=128, causal=False):
    scale = 1.0 / math.sqrt(dim) * 1.44269504   # log2(e): exp2 below
    shape = (batch, seq, heads, dim)

    @T.prim_func
    def main(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"),
             Out: T.Tensor(shape, "float16")):
        with T.Kernel(T.ceildiv(seq, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared((block_M, dim), "float16")
            K_s = T.alloc_shared((block_N, dim), "float16")
            V_s = T.alloc_shared((block_N, dim), "float16")
            O_s = T.alloc_shared((block_M, dim), "float16")
            S = T.alloc_fragment((block_M, block_N), "float32")
            P = T.alloc_fragment((block_M, block_N), "float16")
            O = T.alloc_fragment((block_M, dim), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            m_prev = T.alloc_fragment((block_M,), "float32")
            alpha = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            l = T.alloc_fragment((block_M,), "float32")
            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_s)
            T.fill(O, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            hi = T.ceildiv((bx + 1) * block_M, block_N) if causal else T.ceildiv(seq, block_N)
            for k in T.Pipelined(hi, num_stages=1):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_s)
                for i, j in T.Parallel(block_M, block_N):
                    S[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity("float32")) \
                        if causal else 0
                T.gemm(Q_s, K_s, S, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.reduce_max(S, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    alpha[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    S[i, j] = T.exp2(S[i, j] * scale - m[i] * scale)
                T.reduce_sum(S, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    l[i] = l[i] * alpha[i] + row_sum[i]
                T.copy(S, P)
                for i, j in T.Parallel(block_M, dim):
                    O[i, j] *= alpha[i]
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_s)
                T.gemm(P, V_s, O, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                O[i, j] /= l[i]
            T.copy(O, O_s)
            T.copy(O_s, Out[bz, bx * block_M:(bx + 1) * block_M, by, :])
    return main


def _plan(func, arch="sm_90a", **options):
    from tilelang.backend.cuda.plan.kernel import plan_kernel
    from tilelang.backend.cuda.plan.report import format_plan
    from tilelang.backend.cuda.options import CudaOptions
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    launches, decls = [], []
    walk(func.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    walk(func.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    opts = dataclasses.replace(CudaOptions.from_config(None, arch), **options)
    plan = plan_kernel(launches[0], arch, opts)
    return plan, {b.name: plan.placements.get(id(b)) for b in decls}, format_plan("main", launches[0], plan)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_p_v_reads_p_from_registers(arch):
    plan, p, report = _plan(attention_fwd(), arch)
    qk, pv = plan.gemms.values()
    assert pv.kind == "mma" and pv.a_regs and (pv.WM, pv.WN) == (4, 1)
    assert not qk.a_regs   # Q is a shared tile
    assert p["P"].kind == "acc" and p["P"].acc == p["S"].acc   # the cast stays in registers
    assert "mma.sync m16n8k16, warps 4 x 1, A from registers" in report


def test_switch_off_sends_p_through_shared_memory():
    plan, p, report = _plan(attention_fwd(), mma_rs=False)
    assert not any(c.a_regs for c in plan.gemms.values()) and p["P"].kind == "smem"
    assert "A from registers" not in report


def test_a_split_warp_grid_keeps_p_in_shared_memory():
    """Warps along N each need all of P's columns: no register A (gemm_rs needs WN == 1)."""
    @T.prim_func
    def two_by_two(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            S = T.alloc_fragment((64, 64), "float32")
            P = T.alloc_fragment((64, 64), "float16")
            O = T.alloc_fragment((64, 64), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.clear(S)
            T.gemm(As, Bs, S, policy=T.GemmWarpPolicy.Square)
            T.copy(S, P)
            T.clear(O)
            T.gemm(P, Bs, O, policy=T.GemmWarpPolicy.Square)
            T.copy(O, C)
    plan, p, _ = _plan(two_by_two, "sm_80")
    pv = list(plan.gemms.values())[1]
    assert pv.kind == "mma" and pv.WN == 2 and not pv.a_regs and p["P"].kind == "smem"


BIG = dict(batch=4, heads=32, seq=1024)   # 1024 blocks: more than the SMs


def test_output_tile_takes_q_storage_for_two_blocks_an_sm():
    plan, p, report = _plan(attention_fwd(**BIG))
    assert p["O_s"].offset == p["Q_s"].offset and plan.smem_bytes <= 113 * 1024
    assert "share storage" in report and "2 blocks an SM instead of 1" in report
    assert not any("share storage" in n for n in plan.notes)   # a plan decision, not a warning

    plan, p, report = _plan(attention_fwd(**BIG), smem_sharing_occupancy=False)
    offs = sorted((p[n].offset, p[n].offset + p[n].stage_bytes) for n in ("Q_s", "K_s", "V_s", "O_s"))
    assert all(a[1] <= b[0] for a, b in zip(offs, offs[1:])) and "share storage" not in report


def test_two_hundred_fifty_six_threads_keep_their_own_storage():
    """Registers allow one 256-thread block at 255 registers: sharing would buy nothing."""
    plan, p, _ = _plan(attention_fwd(block_M=128, threads=256, **BIG))
    assert p["O_s"].offset != p["Q_s"].offset


def test_a_grid_smaller_than_the_sms_keeps_its_own_storage():
    """8 blocks would pair up on 4 SMs (the published example's regression case, 64 blocks:
    0.0153 ms apart, 0.0166 ms sharing, on the H200)."""
    plan, p, report = _plan(attention_fwd())
    assert p["O_s"].offset != p["Q_s"].offset and "share storage" not in report
    # a grid of symbolic size is taken as large
    plan, p, report = _plan(attention_fwd(batch=T.dynamic("batch"), heads=2, seq=512))
    assert p["O_s"].offset == p["Q_s"].offset


def _reference(q, k, v, causal):
    import torch
    s = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[1]
        s = s.masked_fill(torch.ones(n, n, device=q.device).tril() == 0, float("-inf"))
    return torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v.float())


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("switches", [{}, {"TILELANG_CUDA_MMA_RS": "0", "TILELANG_CUDA_SMEM_SHARING_OCCUPANCY": "0"}])
def test_gpu_attention_matches_torch(causal, switches, monkeypatch):
    import torch
    for k, v in switches.items():
        monkeypatch.setenv(k, v)
    # 136 blocks (more than the H200's 132 SMs): the output tile shares Q's storage
    kernel = tilelang.compile(attention_fwd(batch=2, heads=17, seq=512, causal=causal), out_idx=[3], target="cuda")
    src = kernel.get_kernel_source()
    assert ("tl::gemm_rs<" in src) == (not switches)
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 512, 17, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    for _ in range(3):   # the blocks sharing an SM run in any order
        out = kernel(q, k, v)
        torch.testing.assert_close(out.float(), _reference(q, k, v, causal), rtol=1e-2, atol=1e-2)


def a_fragment_gemm(bm, threads, dtype, accum, M=256, N=256, K=256, bn=64, bk=32):
    """C = A B with A staged shared -> fragment: the fragment takes the accumulator pattern
    of a bm x bk tile and the mma.sync reads it from registers."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), accum)):
        with T.Kernel(N // bn, M // bm, threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bk, bn), dtype)
            A_f = T.alloc_fragment((bm, bk), dtype)
            C_f = T.alloc_fragment((bm, bn), accum)
            T.clear(C_f)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.copy(A_s, A_f)
                T.gemm(A_f, B_s, C_f, policy=T.GemmWarpPolicy.FullRow)
            T.copy(C_f, C[by * bm, bx * bn])
    return main


# (on sm_90a: tiles of fewer than 4 warps or an fp16 accumulator, which wgmma does not take here)
A_FRAGMENT_CASES = [(16, 32, "float16", "float32"), (32, 64, "bfloat16", "float32"), (64, 64, "float16", "float32"),
                    (64, 128, "float16", "float16")]


@pytest.mark.parametrize("bm,threads,dtype,accum", A_FRAGMENT_CASES)
def test_a_fragment_staged_from_shared_is_read_from_registers(bm, threads, dtype, accum):
    plan, p, _ = _plan(a_fragment_gemm(bm, threads, dtype, accum))
    (cfg,) = plan.gemms.values()
    assert cfg.kind == "mma" and cfg.a_regs and cfg.WN == 1 and p["A_f"].kind == "acc"


@pytest.mark.gpu
@pytest.mark.parametrize("bm,threads,dtype,accum", A_FRAGMENT_CASES)
def test_gpu_a_fragment_gemm_matches_torch(bm, threads, dtype, accum):
    import torch
    kernel = tilelang.compile(a_fragment_gemm(bm, threads, dtype, accum), out_idx=[2], target="cuda")
    assert "tl::gemm_rs<" in kernel.get_kernel_source()
    torch.manual_seed(0)
    tdt = getattr(torch, dtype)
    a, b = torch.randn(256, 256, device="cuda", dtype=tdt), torch.randn(256, 256, device="cuda", dtype=tdt)
    ref = a.float() @ b.float()
    tol = 5e-2 if accum == "float16" or dtype == "bfloat16" else 1e-2
    torch.testing.assert_close(kernel(a, b).float(), ref, rtol=tol, atol=tol * 16)
