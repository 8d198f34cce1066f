"""tilelang.jit.par_compile and JITImpl.par_compile: several kernels compiled in parallel,
in order; ignore_error=True turns a failing one into None with a warning."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.jit import par_compile


@tilelang.jit(out_idx=[-1], target="cpu")
def scale(n, factor, bad=False):
    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                B[i] = A[i] * factor
            if bad:   # traces, then fails in the backend (no target of ours rounds stochastically)
                B[0] = T.cast(T.cast(A[0], "float8_e4m3fn", round="rs", rbits=T.uint32(1)), "float32")
    return k


def test_kernels_come_back_in_order():
    ks = scale.par_compile([{"n": 32, "factor": 2.0}, (64, 3.0)], num_workers=2)
    assert [k(np.ones(n, np.float32))[0] for k, n in zip(ks, (32, 64))] == [2.0, 3.0]


def test_errors_raise_unless_ignored():
    funcs = [scale.get_tir(32, 2.0), scale.get_tir(32, 2.0, bad=True)]
    with pytest.raises(tilelang.TileLangError):
        par_compile(funcs, out_idx=[-1], target="cpu")
    with pytest.warns(UserWarning, match="did not compile"):
        out = par_compile(funcs, out_idx=[-1], target="cpu", ignore_error=True)
    assert out[0] is not None and out[1] is None
