"""`tilelang.lower`: the generated source and lowered IR without running a compiler."""
import pytest

import tilelang
import tilelang.language as T


@T.prim_func
def add_one(A: T.Tensor((64,), "float32")):
    with T.Kernel(2, threads=32) as bx:
        for i in T.Parallel(32):
            A[bx * 32 + i] = A[bx * 32 + i] + 1.0


def test_lower_for_an_arch_without_a_gpu():
    art = tilelang.lower(add_one, target={"kind": "cuda", "arch": "sm_80"})
    assert "__global__" in art.kernel_source
    assert art.device_mod is art.host_mod and "A[bx * 32 + i]" in art.device_mod.script()
    assert [p.name for p in art.params] == ["A"]


def test_lower_on_the_cpu():
    art = tilelang.lower(add_one, target="cpu")
    assert "tl_entry" in art.kernel_source


def test_lower_rejects_other_objects():
    with pytest.raises(tilelang.TileLangError, match="expects a @T.prim_func"):
        tilelang.lower(lambda: None, target="cpu")
