"""Tuple assignments to buffer elements read every right-hand value before storing
(Python's semantics), e.g. a swap."""
import numpy as np

import tilelang
import tilelang.language as T


def test_swap_and_rotate_elements():
    @T.prim_func
    def f(A: T.Tensor((3,), "int32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1) as bx:
            L = T.alloc_local((3,), "int32")
            T.copy(A, L)
            L[0], L[1], L[2] = L[1], L[2], L[0]
            T.copy(L, A)
            B[0], B[1] = B[1], B[0] * 2
    k = tilelang.compile(f, target="cpu")
    a = np.array([1, 2, 3], np.int32)
    b = np.array([5.0, 7.0], np.float32)
    k(a, b)
    np.testing.assert_array_equal(a, [2, 3, 1])
    np.testing.assert_array_equal(b, [7.0, 10.0])


def test_python_tuples_are_untouched():
    @T.prim_func
    def f(A: T.Tensor((2,), "int32")):
        with T.Kernel(1) as bx:
            x, y = 3, 4
            x, y = y, x
            A[0] = x
            A[1] = y
    k = tilelang.compile(f, target="cpu")
    a = np.zeros(2, np.int32)
    k(a)
    np.testing.assert_array_equal(a, [4, 3])
    assert "tuple_tmp" not in f.script()
