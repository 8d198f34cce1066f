import pytest

import tilelang.language as T
from tilelang.ir.errors import ShapeMismatchError
from tilelang.transform.implicit_kernel import implicit_kernel
from tilelang.transform.pass_manager import PassContext


def _ssr(M, N, K, bm=32, bn=32, bk=16):
    @T.prim_func
    def mm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        A_s = T.alloc_shared((bm, bk), "float16")
        B_s = T.alloc_shared((bk, bn), "float16")
        C_f = T.alloc_fragment((bm, bn), "float")
        for i, j, k in T.Parallel(M // bm, N // bn, K // bk, "SSR"):
            T.copy(A[i * bm, k * bk], A_s)
            T.copy(B[k * bk, j * bn], B_s)
            T.gemm(A_s, B_s, C_f)
        T.copy(C_f, C)
    return mm


def test_ssr_becomes_a_kernel():
    text = implicit_kernel(_ssr(64, 96, 32)).script()
    assert "with T.Kernel(2, 3, threads=128) as (bx, by):" in text
    assert "for k in T.serial(2):" in text
    assert "T.fill(C_f, 0.0)" in text  # accumulators start at zero per block
    assert "T.copy(C_f, C[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32])" in text


def test_ragged_whole_tensor_copy_is_an_error():
    @T.prim_func
    def mm(A: T.Tensor((50, 32), "float32"), C: T.Tensor((50, 32), "float32")):
        f = T.alloc_fragment((32, 32), "float")
        for i, j in T.Parallel(2, 1, "SS"):
            T.copy(A[i * 32, j * 32], f)
        T.copy(f, C)
    with pytest.raises(ShapeMismatchError, match="not a multiple of the tile") as e:
        implicit_kernel(mm)
    assert "write the block's slice explicitly" in str(e.value)
