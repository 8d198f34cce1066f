"""jit/divisibility.py: kernels with dynamic dimensions get a variant for dimensions that
divide by 16, chosen per call."""
import re

import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.expr import Var
from tilelang.jit.divisibility import aligned_variant, alignment


def dyn_gemm(bm=64, bn=64, bk=32):
    M, N, K = T.dynamic("m"), T.dynamic("n"), T.dynamic("k")

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), "float16")
            Bs = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, acc)
            T.copy(acc, C[by * bm, bx * bn])
    return gemm


def test_variant_reads_every_dimension_as_a_multiple():
    f = dyn_gemm()
    v = aligned_variant(f, 16)
    assert [x.name for x in v.dynamic_vars()] == ["m_div16", "k_div16", "n_div16"]
    assert "T.Tensor((16 * m_div16, 16 * k_div16)" in v.script()
    assert [x.name for x in f.dynamic_vars()] == ["m", "k", "n"]      # the original is untouched
    assert all(isinstance(d, Var) for d in f.params[0].shape)


def test_variant_pipelines_the_copies_the_generic_kernel_cannot():
    from tests.backend.cuda.helpers import build
    assert "tl::cp_async_gs" not in build(dyn_gemm()).source
    # 16-byte cp.async (predicated where the tile's bounds are not proven)
    assert re.search(r"tl::cp_async_gs(_conditional)?<16>", build(aligned_variant(dyn_gemm(), 16)).source)


def test_alignment_setting():
    assert alignment({}) == 16 and alignment({"tl.dynamic_alignment": 8}) == 8
    assert alignment({"tl.dynamic_alignment": 1}) is None
    with pytest.raises(tilelang.TileLangError, match="tl.dynamic_alignment"):
        alignment({"tl.dynamic_alignment": "x"})


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(256, 192, 320), (250, 190, 333)])
def test_both_variants_on_the_gpu(m, n, k):
    torch = pytest.importorskip("torch")
    kern = tilelang.compile(dyn_gemm(), out_idx=[-1], target="cuda")
    a = torch.randn(m, k, dtype=torch.float16, device="cuda")
    b = torch.randn(k, n, dtype=torch.float16, device="cuda")
    torch.testing.assert_close(kern(a, b), (a.float() @ b.float()).half(), atol=1e-1, rtol=1e-2)
    divisible = m % 16 == 0 and n % 16 == 0 and k % 16 == 0
    assert (kern._aligned_kernel is not None) == divisible
