"""@tilelang.autotune above an eager @tilelang.jit kernel: an explicit config compiles."""
import numpy as np

import tilelang
import tilelang.language as T


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


def test_an_eager_kernel_is_tuned_from_its_const_sizes():
    """`fn.compile(N=...)` with no config (published gemv / mHC backward examples): every
    config traced and timed, the best kernel returned with its config."""
    k = scale.compile(N=256)
    assert k.config in ({"block": 32}, {"block": 64})
    x = np.random.rand(256).astype(np.float32)
    np.testing.assert_allclose(k(x), 2 * x)


def test_an_eager_kernel_called_with_its_tensors_is_tuned_and_runs():
    x = np.random.rand(128).astype(np.float32)
    np.testing.assert_allclose(scale(x), 2 * x)
    assert scale.last_result.config in ({"block": 32}, {"block": 64})
