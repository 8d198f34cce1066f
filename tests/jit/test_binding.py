"""Binding a call's tensors to the kernel's declared shapes and strides (jit/binding.py):
affine dimensions are solved (`n * 3 + 1`), declared strides are checked (before: never,
so a tensor of another layout was read as if it had the declared one), dimensions of
outputs may use scalar arguments, and 4-bit tensors arrive packed two per byte."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.ir.errors import ArgumentError


def test_affine_dimensions_are_solved():
    n = T.symbolic("n")

    @T.prim_func
    def k(A: T.Tensor((n * 3 + 1,), "int32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n * 3 + 1):
                A[i] = i
    kern = tilelang.compile(k, target="cpu")
    a = np.full(16, -1, np.int32)
    kern(a)
    np.testing.assert_array_equal(a, np.arange(16))
    with pytest.raises(ArgumentError, match=r"dimension 0: 15 != "):
        kern(np.zeros(15, np.int32))


def test_declared_strides_are_checked():
    @T.prim_func
    def k(A: T.StridedTensor((4, 4), (8, 2), "float32"), B: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=1):
            T.copy(A, B)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    base = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    torch.testing.assert_close(kern(base[:, ::2]), base[:, ::2])
    with pytest.raises(ArgumentError, match="strides"):
        kern(torch.zeros(4, 4))


def test_output_shape_from_a_scalar_argument():
    @T.prim_func
    def k(m: T.int32):
        B = T.empty([m + 1], "float32")
        with T.Kernel(1, threads=1):
            for i in T.serial(m + 1):
                B[i] = T.cast(i, "float32")
        return B
    assert k.attrs["tilelang_out_idx"] == [-1]
    kern = tilelang.compile(k, target="cpu")
    np.testing.assert_array_equal(kern(5), np.arange(6, dtype=np.float32))


@pytest.mark.parametrize("dtype", ["int4", "uint4", "float4_e2m1fn"])
def test_four_bit_tensors_arrive_packed(dtype):
    @T.prim_func
    def k(A: T.Tensor((4, 16), dtype), B: T.Tensor((4, 16), dtype)):
        with T.Kernel(4, threads=1) as bx:
            for j in T.serial(16):
                B[bx, 15 - j] = A[bx, j]
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = torch.randint(0, 256, (4, 8), dtype=torch.uint8)
    b = kern(a)
    assert b.shape == (4, 8) and b.dtype in (torch.int8, getattr(torch, "float4_e2m1fn_x2", torch.int8))
    lo, hi = a & 0xF, a >> 4
    nib = torch.stack([lo, hi], dim=-1).reshape(4, 16)        # element j of a row
    rev = nib.flip(-1).reshape(4, 8, 2)
    want = (rev[..., 0] | (rev[..., 1] << 4)).to(torch.uint8)
    assert torch.equal(b.view(torch.uint8), want)
    tilelang.compile(k, target="cuda -arch=sm_90a")
    with pytest.raises(ArgumentError, match="shape"):
        kern(torch.zeros(4, 16, dtype=torch.uint8))   # 32 elements a row, not 16
