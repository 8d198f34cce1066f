"""Vector values lane by lane: `T.alloc_var(T.float16x2)`, `T.float16x2(a, b)` and
`T.extract_lane(v, i)` (ir/expr.Shuffle), on the CPU reference and on the GPU."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E


def swap_pairs(dtype, vector_dtype):
    @T.prim_func
    def k(A: T.Tensor((4,), dtype), B: T.Tensor((4,), dtype)):
        with T.Kernel(1, threads=1):
            packed = T.alloc_var(vector_dtype)
            for p in T.serial(2):
                packed = vector_dtype(A[2 * p], A[2 * p + 1])
                B[2 * p] = T.extract_lane(packed, 1)
                B[2 * p + 1] = T.extract_lane(packed, 0)
    return k


def test_extract_lane_is_a_shuffle_of_one_lane():
    v = E.Var("v", "int8x4")
    r = T.extract_lane(v, 2)
    assert isinstance(r, T.Shuffle) and r.dtype.name == "int8"
    assert r.vectors[0] is v and r.indices[0].value == 2
    built = T.float16x2(1.0, 2.0)
    assert built.dtype.name == "float16x2" and [i.value for i in built.indices] == [0, 1]


@pytest.mark.parametrize("bad,err", [((1, 0), TypeError), ((E.Var("s", "float16"), 0), ValueError),
                                     ((E.Var("v", "float16x2"), E.Var("i", "int32")), TypeError),
                                     ((E.Var("v", "float16x2"), 2), IndexError)])
def test_extract_lane_rejects_bad_input(bad, err):
    with pytest.raises(err):
        T.extract_lane(*bad)


def test_vector_var_round_trip_on_cpu():
    kern = tilelang.compile(swap_pairs("float16", T.float16x2), target="cpu")
    a = np.array([1.25, -2.5, 3.0, 4.5], dtype=np.float16)
    b = np.zeros_like(a)
    kern(a, b)
    np.testing.assert_array_equal(b, a[[1, 0, 3, 2]])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,vector_dtype", [("float16", T.float16x2), ("bfloat16", T.bfloat16x2),
                                                ("float32", T.float32x2)])
def test_gpu_vector_var_round_trip(dtype, vector_dtype):
    import torch
    kern = tilelang.compile(swap_pairs(dtype, vector_dtype), target="cuda")
    a = torch.tensor([1.25, -2.5, 3.0, 4.5], dtype=getattr(torch, dtype), device="cuda")
    b = torch.zeros_like(a)
    kern(a, b)
    assert torch.equal(b, a[[1, 0, 3, 2]])
