"""Column vectors of an accumulator in registers (layout/fragment.py ColLayout): a 1-D
fragment read as `mask[j]` / `bias[j]` by a T.Parallel nest over a gemm accumulator takes
the accumulator's column layout, and the 1-D nest that fills it runs on the columns each
thread holds. Before, such a vector (the sparse MLA forward's `mask[bi]`) went to shared
memory, with a block barrier between its fill and its use in every iteration."""
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.layout.fragment import AccLayout, ColLayout
from tilelang.backend.registry import get_backend, parse_target
from tilelang.backend.cuda.plan.kernel import plan_kernel
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build, sass_ops


def masked_bias_gemm(M=128, N=128, K=64, bm=64, bn=64, threads=128, col_index="j"):
    """C = where(Idx[col] <= lim, A @ B.T + bias[col], -1e4) per block of columns; the
    mask and the bias are fragments of the block's bn columns."""
    @T.prim_func
    def f(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), Bias: T.Tensor((N,), "float32"),
          Idx: T.Tensor((N,), "int32"), C: T.Tensor((M, N), "float32"), lim: T.int32):
        with T.Kernel(N // bn, M // bm, threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, K), "float16")
            B_s = T.alloc_shared((bn, K), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            mask = T.alloc_fragment((bn,), "bool")
            bias = T.alloc_fragment((bn,), "float32")
            T.copy(A[by * bm, 0], A_s)
            T.copy(B[bx * bn, 0], B_s)
            for j in T.Parallel(bn):
                mask[j] = Idx[bx * bn + j] <= lim
            T.copy(Bias[bx * bn], bias)
            T.clear(acc)
            T.gemm(A_s, B_s, acc, transpose_B=True)
            for i, j in T.Parallel(bm, bn):
                if col_index == "j":
                    acc[i, j] = T.if_then_else(mask[j], acc[i, j] + bias[j], -1e4)
                else:   # read by row: no column layout can serve it
                    acc[i, j] = T.if_then_else(mask[i], acc[i, j] + bias[i], -1e4)
            T.copy(acc, C[by * bm, bx * bn])
    return f


def _reference(a, b, bias, idx, lim, col_index="j"):
    c = a.float() @ b.float().T
    if col_index == "j":
        return torch.where((idx <= lim)[None, :], c + bias[None, :], torch.tensor(-1e4))
    bn = 64
    rows = torch.arange(a.shape[0]) % bn   # mask[i] / bias[i] of the block's columns
    out = torch.empty_like(c)
    for bx in range(b.shape[0] // bn):
        cols = slice(bx * bn, (bx + 1) * bn)
        m = (idx[cols] <= lim)[rows]
        out[:, cols] = torch.where(m[:, None], c[:, cols] + bias[cols][rows][:, None], torch.tensor(-1e4))
    return out


def _placements(func, arch="sm_90a"):
    """{buffer name: Placement} of the plan of the kernel, after the CUDA pipeline."""
    target = parse_target({"kind": "cuda", "arch": arch})
    lowered = get_backend("cuda").lower(func, target, None)
    launches, decls = [], []
    walk(lowered.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    walk(lowered.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    plan = plan_kernel(launches[0], arch)
    return {b.name: plan.placements[id(b)] for b in decls if id(b) in plan.placements}


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_mask_and_bias_take_the_accumulators_column_layout(arch):
    p = _placements(masked_bias_gemm(), arch)
    acc = p["acc"].acc
    assert p["acc"].kind == "acc" and isinstance(acc, AccLayout)
    for name in ("mask", "bias"):
        assert p[name].kind == "col" and p[name].acc == acc.col_layout(), (name, p[name])
        assert isinstance(p[name].acc, ColLayout) and p[name].acc.regs == acc.N // acc.WN // 4


def test_a_vector_read_by_row_is_not_a_column_vector():
    p = _placements(masked_bias_gemm(col_index="i"))
    for name in ("mask", "bias"):
        assert p[name].kind != "col", (name, p[name])


@pytest.mark.parametrize("col_index", ["j", "i"])
def test_cpu_matches_reference(col_index):
    torch.manual_seed(0)
    a, b = torch.randn(128, 64, dtype=torch.float16), torch.randn(128, 64, dtype=torch.float16)
    bias, idx = torch.randn(128), torch.randint(0, 100, (128,), dtype=torch.int32)
    c = torch.empty(128, 128)
    tilelang.compile(masked_bias_gemm(col_index=col_index), target="cpu")(a, b, bias, idx, c, 50)
    torch.testing.assert_close(c, _reference(a, b, bias, idx, 50, col_index), rtol=1e-3, atol=1e-3)


@needs_sass
def test_column_vectors_live_in_registers_without_a_barrier():
    art = build(masked_bias_gemm())
    ops = sass_ops(art)
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops
    # the vectors are registers: no shared-memory pointer for them in the source
    assert "* mask = reinterpret_cast" not in art.source and "* bias = reinterpret_cast" not in art.source


@pytest.mark.gpu
@pytest.mark.parametrize("col_index", ["j", "i"])
@pytest.mark.parametrize("threads", [128, 256])
def test_gpu_matches_reference(col_index, threads):
    torch.manual_seed(0)
    a, b = torch.randn(128, 64, dtype=torch.float16), torch.randn(128, 64, dtype=torch.float16)
    bias, idx = torch.randn(128), torch.randint(0, 100, (128,), dtype=torch.int32)
    c = torch.empty(128, 128, device="cuda")
    k = tilelang.compile(masked_bias_gemm(threads=threads, col_index=col_index), target="cuda")
    k(a.cuda(), b.cuda(), bias.cuda(), idx.cuda(), c, 50)
    torch.testing.assert_close(c.cpu(), _reference(a, b, bias, idx, 50, col_index), rtol=1e-3, atol=1e-3)
