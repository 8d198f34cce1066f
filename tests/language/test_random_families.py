"""T.rng_init(generator="curandStateXORWOW_t" / "curandStateMRG32k3a_t"): the CPU backend's
draws equal the Python oracle (rng_reference.py), skip-ahead included; the float draws
are the transforms of those integers; the CUDA source calls the same functions. The GPU
against the CPU and against cuRAND's own headers: tests/backend/cuda/test_run_gpu_random_families.py."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.language import rng_reference as R

XORWOW, MRG = "curandStateXORWOW_t", "curandStateMRG32k3a_t"
ORACLE = {XORWOW: (R.xw_init, R.xw_next), MRG: (R.mrg_init, R.mrg_next)}
N, NORMALS = 16, 2048


def draws_kernel(generator):
    """Block b draws from subsequence seq + b: N integers, N uniform floats, NORMALS normal
    doubles (each from a generator of its own)."""
    @T.prim_func
    def k(seed: T.uint64, seq: T.uint64, off: T.uint64, I: T.Tensor((2, N), "uint32"),
          U: T.Tensor((2, N), "float32"), ND: T.Tensor((2, NORMALS), "float64")):
        with T.Kernel(2, threads=1) as bx:
            T.rng_init(seed, seq + bx, off, generator=generator)
            for i in T.serial(N):
                I[bx, i] = T.rng_rand()
            T.rng_init(seed, seq + bx, off, generator=generator)
            for i in T.serial(N):
                U[bx, i] = T.rng_rand_float()
            for i in T.serial(NORMALS):
                ND[bx, i] = T.rng_rand_float(64, "normal")
    return k


_compiled = {}


def run(generator, seed, seq, off):
    if generator not in _compiled:   # one compile per generator: the seeds are arguments
        _compiled[generator] = tilelang.compile(draws_kernel(generator), target="cpu")
    outs = np.zeros((2, N), np.uint32), np.zeros((2, N), np.float32), np.zeros((2, NORMALS), np.float64)
    _compiled[generator](seed, seq, off, *outs)
    return outs


def oracle(generator, seed, seq, off, n=N):
    init, nxt = ORACLE[generator]
    st = init(seed, seq, off)
    return [nxt(st) for _ in range(n)]


@pytest.mark.parametrize("generator", [XORWOW, MRG])
def test_cpu_draws_equal_the_oracle(generator):
    for seed, seq, off in [(42, 0, 0), (0, 3, 5), (2 ** 40 + 7, 2 ** 62 + 1, 2 ** 35 + 2)]:
        ints, unif, normal = run(generator, seed, seq, off)
        for b in range(2):
            ref = np.array(oracle(generator, seed, seq + b, off), np.uint32)
            np.testing.assert_array_equal(ints[b], ref)
            if generator == XORWOW:   # curand_uniform: fma(x, 2^-32, 2^-33)
                np.testing.assert_array_equal(unif[b], (ref * 2.0 ** -32 + 2.0 ** -33).astype(np.float32))
            else:                     # z / (m1 + 1) for z in [1, m1]
                assert ((unif[b] > 0) & (unif[b] < 1)).all()
        assert abs(normal.mean()) < 0.05 and abs(normal.std() - 1) < 0.05


def test_the_oracle_skips_ahead_as_it_steps():
    import random
    v = [random.getrandbits(32) for _ in range(5)]
    w = v
    for _ in range(300):
        w = R.xw_step(w)
    assert R.xw_jump(v, 300) == w
    st = R.mrg_init(7, 0, 0)
    for _ in range(300):
        R.mrg_next(st)
    assert R.mrg_init(7, 0, 300) == st


def test_cuda_source_calls_the_generators_functions():
    pytest.importorskip("cuda.bindings")
    from tests.backend.cuda.helpers import build
    src = build(draws_kernel(MRG), "sm_90a").source
    assert "tl::mrg32k3a::rng_init(" in src and "tl::mrg32k3a::rng_normal_double(" in src
