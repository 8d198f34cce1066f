"""`T.assume(N % 4 == 0)` at the top of a kernel lets vectorization treat the runtime
stride N as a multiple of 4 (arith/divisibility.py): rows of a (M, N) tensor then
start on 16-byte boundaries and a T.vectorized copy becomes float4 accesses; the
promise is checked on the host at each call. Promises under a branch do not count."""
import pytest

import tilelang
import tilelang.language as T
from tilelang.arith.divisibility import assumed_divisors
from tilelang.backend.cuda.host.nvrtc import nvrtc_available
from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tests.backend.cuda.helpers import build

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed")


def row_copy(M, where="top"):
    N = T.dynamic("N")

    @T.prim_func
    def k(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=32):
            tid = T.get_thread_binding()
            if where == "top":
                T.assume(N % 4 == 0)
            if where == "branch":
                if tid < 4:
                    T.assume(N % 4 == 0)
            for i in T.vectorized(4):
                T.assume(tid * 4 + i < N)
                B[tid, tid * 4 + i] = A[tid, tid * 4 + i]
    return k


def test_divisors_of_top_level_promises_only():
    n, m = E.Var("n", "int32"), E.Var("m", "int32")
    top = S.seq([S.Assume(E.binop("==", n % 8, 0)),
                 S.IfThenElse(E.binop("<", m, 4), S.Assume(E.binop("==", m % 4, 0)))])
    assert assumed_divisors(top, lambda v: True) == {id(n): 8}
    assert assumed_divisors(top, lambda v: v is not n) == {}


@needs_nvrtc
@pytest.mark.parametrize("where,vec", [("top", True), ("none", False), ("branch", False)])
def test_assumed_divisibility_vectorizes(where, vec):
    src = build(row_copy(128, where)).source
    assert ("*reinterpret_cast<float4*>(&B[" in src) == vec
    assert "if (((" not in src   # no bounds checks either way


@pytest.mark.gpu
def test_assumed_divisibility_on_the_gpu():
    import torch
    k = tilelang.compile(row_copy(32), target="cuda")
    a = torch.randn(32, 128, device="cuda")
    b = torch.zeros_like(a)
    k(a, b)
    for t in range(32):
        torch.testing.assert_close(b[t, 4 * t:4 * t + 4], a[t, 4 * t:4 * t + 4], atol=0, rtol=0)
    with pytest.raises(Exception):   # the promise is checked at the call
        k(torch.randn(32, 130, device="cuda"), torch.zeros(32, 130, device="cuda"))
