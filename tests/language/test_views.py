import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError


def test_reshape_of_a_global_and_a_shared_buffer():
    @T.prim_func
    def f(A: T.Tensor((4, 8), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1) as bx:
            A2 = T.reshape(A, (32,))
            s = T.alloc_shared((4, 8), "float32")
            s1 = T.reshape(s, (32,))
            for i in T.Parallel(32):
                s1[i] = A2[i] * 2
            for i, j in T.Parallel(4, 8):
                B[i * 8 + j] = s[i, j] + 1
    k = tilelang.compile(f, out_idx=[-1], target="cpu")
    a = np.random.rand(4, 8).astype(np.float32)
    np.testing.assert_allclose(k(a), a.reshape(-1) * 2 + 1, rtol=1e-6)


def test_view_reinterprets_bits():
    @T.prim_func
    def f(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "int32")):
        with T.Kernel(1) as bx:
            Ai = T.view(A, dtype="int32")
            for i in T.Parallel(8):
                B[i] = Ai[i]
    k = tilelang.compile(f, out_idx=[-1], target="cpu")
    a = np.random.rand(8).astype(np.float32)
    np.testing.assert_array_equal(k(a), a.view(np.int32))


def test_reshape_size_mismatch_is_an_error():
    with pytest.raises(TileLangError, match="same bytes"):
        @T.prim_func
        def f(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1) as bx:
                T.reshape(A, (33,))
