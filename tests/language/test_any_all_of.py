"""T.any_of / T.all_of over a buffer or a region (the published form) and over scalar
conditions. Before: a buffer or region was returned as is, and `if T.any_of(mask)` was
always taken (a silent wrong result)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T

R, C = 8, 4


def _kernel(fn, scope):
    @T.prim_func
    def k(M: T.Tensor((R, C), "bool"), O: T.Tensor((R,), "int32")):
        with T.Kernel(R, threads=1) as bx:
            if scope == "global":
                O[bx] = T.if_then_else(fn(M[bx, :]), 1, 0)
            else:
                m = T.alloc_shared((C,), "bool") if scope == "shared" else T.alloc_local((C,), "bool")
                for i in T.serial(C):
                    m[i] = M[bx, i]
                O[bx] = T.if_then_else(fn(m), 1, 0)
    return tilelang.compile(k, out_idx=[1], target="cpu")


@pytest.mark.parametrize("scope", ["global", "shared", "local"])
@pytest.mark.parametrize("name", ["any_of", "all_of"])
def test_region_and_buffer(name, scope):
    mask = np.zeros((R, C), dtype=bool)
    mask[1, 2] = True
    mask[3, :] = True
    mask[5, :3] = True
    out = _kernel(getattr(T, name), scope)(mask)
    ref = getattr(np, name.split("_")[0])(mask, axis=1).astype(np.int32)
    np.testing.assert_array_equal(out, ref)


def test_scalar_conditions():
    @T.prim_func
    def k(A: T.Tensor((4,), "int32"), O: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=1):
            O[0] = T.if_then_else(T.any_of(A[0] > 0, A[1] > 0), 1, 0)
            O[1] = T.if_then_else(T.all_of(A[2] > 0, A[3] > 0), 1, 0)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    np.testing.assert_array_equal(kern(np.array([0, 1, 1, 0], np.int32)), [1, 0])
    np.testing.assert_array_equal(kern(np.array([0, 0, 1, 1], np.int32)), [0, 1])


def test_symbolic_extent_is_an_error():
    n = T.dynamic("n")
    with pytest.raises(Exception, match="constant extent"):
        @T.prim_func
        def k(M: T.Tensor((n,), "bool"), O: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=1):
                O[0] = T.if_then_else(T.any_of(M[0:n]), 1, 0)
