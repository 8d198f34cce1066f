"""How `@T.prim_func` reads its parameters' annotations."""
import numpy as np
import pytest

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


def test_parameters_annotated_in_the_body_and_returned_outputs():
    # the published "lazy" form: annotations as the body's first statements, T.empty
    # outputs returned (the tilelang_out_idx attribute), kernel-level pass configs
    import numpy as np
    import tilelang
    from tilelang.transform import PassConfigKey

    @T.prim_func
    def kernel(A):
        A: T.Tensor[[8, 8], T.float32]
        T.annotate_pass_configs({PassConfigKey.TL_ENABLE_FAST_MATH: True})
        B = T.empty([8, 8], T.float32)
        with T.Kernel(1):
            for i, j in T.Parallel(8, 8):
                B[i, j] = A[i, j] * 2.0
        return B

    assert kernel.attrs["tilelang_out_idx"] == [-1]
    assert kernel.attrs["tilelang_pass_configs"] == {"tl.enable_fast_math": True}
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_array_equal(tilelang.compile(kernel, target="cpu")(a), a * 2)
    with pytest.raises(ValueError, match="Out index conflict"):
        tilelang.compile(kernel, out_idx=[-1], target="cpu")
