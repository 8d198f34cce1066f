"""GPU: bitwise atomics and the running maximum against torch."""
import pytest

import tilelang
import tilelang.language as T

pytestmark = pytest.mark.gpu


def test_bitwise_atomics_gpu():
    import torch

    @T.prim_func
    def bits(Flags: T.Tensor((1024,), "int32"), Out: T.Tensor((3,), "int32")):
        with T.Kernel(8, threads=128) as bx:
            for i in T.Parallel(128):
                T.atomic_or(Out[0], Flags[bx * 128 + i])
                T.atomic_and(Out[1], Flags[bx * 128 + i])
                T.atomic_xor(Out[2], Flags[bx * 128 + i])
    kern = tilelang.compile(bits, target="cuda")
    flags = torch.randint(0, 2 ** 30, (1024,), device="cuda", dtype=torch.int32)
    out = torch.tensor([0, -1, 0], device="cuda", dtype=torch.int32)
    kern(flags, out)
    f = flags.cpu().tolist()
    o, a, x = 0, -1, 0
    for v in f:
        o, a, x = o | v, a & v, x ^ v
    assert out.cpu().tolist() == [o, a, x]


@pytest.mark.parametrize("dim", [0, 1])
def test_cummax_gpu(dim):
    import torch

    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), O: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            X = T.alloc_shared((64, 64), "float32")
            T.copy(A, X)
            T.cummax(X, dim=dim)
            T.copy(X, O)
    kern = tilelang.compile(k, out_idx=[1], target="cuda")
    a = torch.randn(64, 64, device="cuda")
    torch.testing.assert_close(kern(a), torch.cummax(a, dim).values)
