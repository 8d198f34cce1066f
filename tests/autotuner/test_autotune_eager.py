"""@tilelang.autotune above an eager @tilelang.jit kernel: an explicit config compiles."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError


@tilelang.autotune(configs=[{"block": 32}, {"block": 64}])
@tilelang.jit
def scale(x, block=32):
    N = T.const("N")
    x: T.Tensor((N,), "float32")
    y = T.empty((N,), "float32")
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            y[bx * block + i] = x[bx * block + i] * 2.0
    return y


def test_explicit_config_compiles_without_tensors():
    k = scale.compile(N=256, block=64)
    x = np.random.rand(256).astype(np.float32)
    np.testing.assert_allclose(k(x), 2 * x)


def test_tuning_an_eager_kernel_says_it_is_not_supported():
    with pytest.raises(TileLangError, match="eager kernel"):
        scale.compile(N=256)
