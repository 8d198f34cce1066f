"""Copies through a view of a tensor parameter (`T.Tensor(shape, dtype, A.data)`,
T.reshape) are vectorized like copies of the parameter, and the runtime checks the
parameter's alignment."""
import numpy as np

import tilelang
import tilelang.language as T
from tests.backend.cuda.helpers import build


def flat_copy(M=64, N=128):
    @T.prim_func
    def k(A: T.Tensor((M // 2, 2, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=128):
            A_flat = T.Tensor((M, N), "float16", A.data)
            S = T.alloc_shared((M, N), "float16")
            T.copy(A_flat, S)
            for i, j in T.Parallel(M, N):
                B[i, j] = S[i, j] * 2.0
    return k


def test_view_copies_are_vector_copies_and_the_parameter_is_checked():
    art = build(flat_copy())
    assert "reinterpret_cast<uint4*>(&S" in art.source or "tl::cp_async_gs<16>" in art.source
    assert art.meta["kernels"][0]["aligned"].get("A", 1) >= 16


def test_view_copy_on_the_cpu_reference():
    a = np.random.default_rng(0).standard_normal((32, 2, 128)).astype("float16")
    b = np.zeros((64, 128), "float16")
    tilelang.compile(flat_copy(), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a.reshape(64, 128) * np.float16(2))
