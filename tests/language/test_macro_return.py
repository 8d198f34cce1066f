"""What a `@T.macro` returns: values. A variable (T.alloc_var) is returned as its value (a
load, a PrimExpr, as published: `test_marco_return` of the published frontend tests); a macro's
return never becomes an eager kernel's outputs (only the kernel body's own return does)."""
import numpy as np

import tilelang
import tilelang.language as T
from tilelang.ir.expr import BufferLoad


@T.macro
def var_of(x):
    return T.alloc_var(T.float32, init=x)


@T.macro
def pair(x):
    return T.alloc_var(T.int32, init=x), x + 1


def test_a_returned_variable_is_its_value():
    seen = []

    @T.prim_func
    def k(A: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=1):
            v = var_of(3.0)
            seen.append(v)
            A[0] = v + 1.0
            a, b = pair(7)
            seen.append(a)
            A[1] = T.cast(a + b, "float32")
    assert isinstance(seen[0], BufferLoad) and isinstance(seen[0], T.PrimExpr) and seen[0].buffer.is_var()
    assert isinstance(seen[1], BufferLoad)
    a = np.zeros(2, "float32")
    tilelang.compile(k, target="cpu")(a)
    np.testing.assert_array_equal(a, [4.0, 15.0])


def test_a_macro_return_is_not_the_eager_kernels_output():
    @T.macro
    def scaled(x):
        return x * 2

    @tilelang.jit(target="cpu")
    def k(A):
        n = T.const("n")
        A: T.Tensor((n,), T.float32)
        B = T.empty((n,), T.float32)
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                B[i] = scaled(A[i])
        return B
    out = k(np.arange(4, dtype="float32"))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 4.0, 6.0])

    @tilelang.jit(target="cpu")
    def in_place(A):   # returns nothing: the macro's value must not become an output
        n = T.const("n")
        A: T.Tensor((n,), T.float32)
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                A[i] = scaled(A[i])
    a = np.arange(4, dtype="float32")
    assert in_place(a) is None
    np.testing.assert_array_equal(a, [0.0, 2.0, 4.0, 6.0])
