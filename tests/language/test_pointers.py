"""Addresses: `T.ptr` parameters (a tensor's data pointer or an int is passed) and
`T.make_tensor(address, shape, dtype)`, also through tables of addresses
(`T.Tensor([n], T.ptr)`, int64), as the published pointer-table kernels use them."""
import numpy as np
import torch

import tilelang
import tilelang.language as T


def test_tensor_from_a_pointer_parameter():
    @T.prim_func
    def k(a_ptr: T.ptr, n: T.int32, out: T.Tensor((8,), "float32")):
        A = T.make_tensor(a_ptr, (n,), "float32")
        with T.Kernel(1, threads=8):
            for i in T.serial(8):
                out[i] = A[i] * 2.0
    assert 'A = T.make_tensor(a_ptr, (n,), "float32")' in k.script()
    kern = tilelang.compile(k, out_idx=[2], target="cpu")
    a = torch.arange(8, dtype=torch.float32)
    torch.testing.assert_close(kern(a, 8), a * 2)
    tilelang.compile(k, out_idx=[2], target="cuda -arch=sm_90a")


def test_a_table_of_addresses():
    G, N = 3, 16

    @T.prim_func
    def k(src_ptrs: T.Tensor([G], T.ptr), out: T.Tensor([G, N], "float16")):
        with T.Kernel(G, threads=1) as bx:
            src = T.make_tensor(src_ptrs[bx], (N,), "float16")
            for i in T.serial(N):
                out[bx, i] = src[i]
    assert k.params[0].dtype == "int64"
    srcs = [torch.randn(N, dtype=torch.float16) for _ in range(G)]
    table = torch.tensor([s.data_ptr() for s in srcs], dtype=torch.int64)
    out = torch.empty(G, N, dtype=torch.float16)
    tilelang.compile(k, target="cpu")(table, out)
    torch.testing.assert_close(out, torch.stack(srcs))
    tilelang.compile(k, target="cuda -arch=sm_90a")
