"""How `@T.prim_func` reads its parameters' annotations."""
import numpy as np

import tilelang
import tilelang.language as T


def test_annotation_names_a_factory_local_the_body_does_not_use():
    # `shape` appears only in the annotation, so the kernel's closure does not capture it;
    # the annotation was evaluated when the user's `def` ran and must not be re-evaluated.
    def factory(M):
        shape = [M]

        @T.prim_func
        def double(A: T.Tensor(shape, "float32"), B: T.Tensor(shape, "float32")):
            with T.Kernel(1):
                for i in T.Parallel(M):
                    B[i] = A[i] * 2
        return double

    k = tilelang.compile(factory(8), target="cpu")
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, dtype=np.float32)
    k(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_torch_dtype_annotation():
    import torch

    @T.prim_func
    def copy(A: T.Tensor((4,), torch.float16), B: T.Tensor((4,), torch.float16)):
        with T.Kernel(1):
            for i in T.Parallel(4):
                B[i] = A[i]

    assert str(copy.params[0].dtype) == "float16"
