"""T.Layout / T.Fragment and the swizzle factories used from kernel code:
`T.annotate_layout` is accepted and results are unchanged on the CPU backend."""
import numpy as np

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout, make_full_bank_swizzled_layout

M = N = K = 64


def _gemm(annotate):
    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            C_l = T.alloc_fragment((M, N), "float32")
            if annotate:
                T.annotate_layout({
                    A_s: make_swizzled_layout(A_s),
                    B_s: make_full_bank_swizzled_layout(B_s),
                    C_l: T.Fragment((M, N), forward_thread_fn=lambda i, j: (i // 16) % 2 * 32 + (j // 8) % 2 * 64
                                    + (i % 8) * 4 + (j % 8) // 2,
                                    forward_index_fn=lambda i, j: j % 2 + (i % 16) // 8 * 2 + i // 32 * 4
                                    + j // 16 * 8),
                })
            T.clear(C_l)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C)
    return k


def test_annotated_gemm_unchanged_on_cpu():
    a = np.random.randn(M, K).astype(np.float16)
    b = np.random.randn(K, N).astype(np.float16)
    plain = tilelang.compile(_gemm(False), out_idx=[2], target="cpu")(a, b)
    annotated = tilelang.compile(_gemm(True), out_idx=[2], target="cpu")(a, b)
    np.testing.assert_allclose(annotated, plain, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(annotated, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_T_Layout_annotation_on_shared_copy():
    @T.prim_func
    def k(A: T.Tensor((32, 32), "float32"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((32, 32), "float32")
            T.annotate_layout({S: T.Layout((32, 32), lambda i, j: [i, ((j // 4) ^ (i % 8)) * 4 + j % 4])})
            T.copy(A, S)
            T.copy(S, C)
    assert T.Layout((32, 32), lambda i, j: [i, ((j // 4) ^ (i % 8)) * 4 + j % 4]).is_bijective()
    a = np.random.randn(32, 32).astype(np.float32)
    np.testing.assert_array_equal(tilelang.compile(k, out_idx=[1], target="cpu")(a), a)


def test_annotated_fragment_is_the_published_accumulator():
    from tilelang.layout import make_gemm_accumulator_fragment
    f = T.Fragment((M, N), forward_thread_fn=lambda i, j: (i // 16) % 2 * 32 + (j // 8) % 2 * 64
                   + (i % 8) * 4 + (j % 8) // 2,
                   forward_index_fn=lambda i, j: j % 2 + (i % 16) // 8 * 2 + i // 32 * 4 + j // 16 * 8)
    assert f.is_equal(make_gemm_accumulator_fragment(M, N, 128, "Square"))
