"""The published entry points of the simplify pass: `apply_simplify(f)` and
`@simplify_prim_func`, which also drop tensor parameters the body never touches."""
import torch

import tilelang
import tilelang.language as T
from tilelang.transform import apply_simplify, simplify_prim_func


def _gemv_like(with_bias):
    n = T.symbolic("n")

    @T.prim_func
    def main(A: T.Tensor((4, n), "float32"), Bias: T.Tensor((4,), "float32"), Shape: T.Tensor((n,), "float32"),
             C: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                C[i] = A[i, 0] + (Bias[i] if with_bias else 0.0)
    return main


def test_unused_tensor_parameters_are_dropped():
    f = apply_simplify(_gemv_like(False))
    # Bias is never read; Shape is not read either but nothing else needs it
    assert [p.name for p in f.params] == ["A", "C"]
    assert [p.name for p in apply_simplify(_gemv_like(True)).params] == ["A", "Bias", "C"]
    a = torch.randn(4, 3)
    c = torch.zeros(4)
    tilelang.compile(f, target="cpu")(a, c)
    assert torch.equal(c, a[:, 0])


def test_simplify_prim_func_decorates_a_factory():
    @simplify_prim_func
    def factory():
        @T.prim_func
        def k(A: T.Tensor((4,), "float32"), Unused: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4):
                for i in T.Parallel(4):
                    A[i] = A[i] * (2 + 0)
        return k
    f = factory()
    assert [p.name for p in f.params] == ["A"] and "* 2" in f.script()
