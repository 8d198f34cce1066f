"""User mistakes in tile shapes: each error names the user's file, line and column,
shows the line with a caret and says what to do."""
import pytest

import tilelang.language as T
from tilelang.ir.errors import ShapeMismatchError, TileLangError


def _check_rendering(err, snippet):
    text = str(err)
    first = text.splitlines()[0]
    assert first.startswith(__file__ + ":"), first
    line = int(first.split(":")[1])
    col = int(first.split(":")[2])
    lines = text.splitlines()
    assert snippet in lines[1]
    caret = lines[2]
    assert caret.strip().startswith("^")
    assert caret.index("^") - 4 == col - 1
    assert any(l.startswith("hint:") for l in lines)
    return line


def test_copy_shape_mismatch():
    with pytest.raises(ShapeMismatchError) as e:
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1) as bx:
                s = T.alloc_shared((32, 32), "float16")
                T.copy(A[0:64, 0:16], s)
    _check_rendering(e.value, "T.copy(A[0:64, 0:16], s)")
    assert "source A [64, 16] vs destination s [32, 32]" in str(e.value)
    assert e.value.__suppress_context__  # no chained internal traceback


def test_gemm_k_mismatch():
    with pytest.raises(ShapeMismatchError, match="reduction dims differ") as e:
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1) as bx:
                a = T.alloc_shared((64, 32), "float16")
                b = T.alloc_shared((16, 64), "float16")
                c = T.alloc_fragment((64, 64), "float")
                T.gemm(a, b, c)
    _check_rendering(e.value, "T.gemm(a, b, c)")


def test_gemm_output_mismatch_mentions_transpose():
    with pytest.raises(ShapeMismatchError, match="is 64x32 but A @ B is 64x64") as e:
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1) as bx:
                a = T.alloc_shared((64, 32), "float16")
                b = T.alloc_shared((64, 32), "float16")
                c = T.alloc_fragment((64, 32), "float")
                T.gemm(a, b, c, transpose_B=True)
    _check_rendering(e.value, "T.gemm(a, b, c, transpose_B=True)")


def test_reduce_destination_shape():
    with pytest.raises(ShapeMismatchError, match="allocate the destination with shape") as e:
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float")):
            with T.Kernel(1) as bx:
                f = T.alloc_fragment((64, 32), "float")
                r = T.alloc_fragment((32,), "float")
                T.reduce_sum(f, r, dim=1)
    _check_rendering(e.value, "T.reduce_sum(f, r, dim=1)")


def test_wrong_number_of_indices():
    with pytest.raises(TileLangError, match="has 2 dimension") as e:
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float")):
            with T.Kernel(1) as bx:
                A[0, 1, 2] = 1.0
    _check_rendering(e.value, "A[0, 1, 2] = 1.0")
