"""T.rng_init / T.rng_rand / T.rng_rand_float: Philox4x32-10 with cuRAND's stream
layout. The CPU backend is checked against a model written here from the definition
(draw k of (seed, subsequence) is word k % 4 of Philox(counter = subsequence * 2^64 +
k // 4, key = seed)) and against the algorithm's published known answers; the GPU must
give the CPU's integers and uniforms bit for bit, and cuRAND's own, where its headers
are installed."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build

MASK = 0xFFFFFFFF


def philox(ctr, key):
    c, (k0, k1) = list(ctr), key
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & MASK, p1 & MASK, ((p0 >> 32) ^ c[3] ^ k1) & MASK, p0 & MASK]
        k0, k1 = (k0 + 0x9E3779B9) & MASK, (k1 + 0xBB67AE85) & MASK
    return c


def draws(seed, subsequence, offset, n):
    out = []
    for k in range(offset, offset + n):
        ctr = (subsequence << 64) + k // 4
        out.append(philox([(ctr >> (32 * i)) & MASK for i in range(4)], [seed & MASK, seed >> 32])[k % 4])
    return np.array(out, np.uint32)


def uniform(words):
    """cuRAND's uniform float: fma(float(x), 2^-32, 2^-33), never 0."""
    inv = np.float32(2.3283064e-10)
    return (words.astype(np.float32).astype(np.float64) * np.float64(inv) + np.float64(inv / 2)).astype(np.float32)


def test_model_reproduces_known_answers():
    # Random123's known-answer vectors for philox4x32-10
    assert philox([0] * 4, [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert philox([MASK] * 4, [MASK, MASK]) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert philox([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0]) == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def _per_block(M, seed, seq, per_block=128, dist=None, bit=32):
    """One thread per block draws `per_block` values from offset bx * per_block (the
    published example's layout, equal to Triton's randint4x)."""
    dt = "uint32" if dist is None else f"float{bit}"

    @T.prim_func
    def k(A: T.Tensor((M,), dt)):
        with T.Kernel(T.ceildiv(M, per_block), threads=1) as bx:
            T.rng_init(seed, seq, bx * per_block)
            for i in T.Parallel(per_block):
                if bx * per_block + i < M:
                    A[bx * per_block + i] = T.rng_rand() if dist is None else T.rng_rand_float(bit, dist)
    return k


def _cpu(func, n, dtype):
    out = np.zeros(n, dtype)
    tilelang.compile(func, target="cpu")(out)
    return out


@pytest.mark.parametrize("seed,seq", [(42, 0), (0, 0), (2 ** 40 + 7, 3)])
def test_cpu_integers_follow_the_stream(seed, seq):
    a = _cpu(_per_block(500, seed, seq), 500, np.uint32)
    np.testing.assert_array_equal(a, draws(seed, seq, 0, 500))


def test_cpu_offsets_inside_a_block_of_four():
    @T.prim_func
    def k(A: T.Tensor((4, 9), "uint32")):
        with T.Kernel(4, threads=1) as bx:
            T.rng_init(7, 1, bx * 5 + 1)   # offsets 1, 6, 11, 16: every position in a block
            for j in T.serial(9):
                A[bx, j] = T.rng_rand()
    a = np.zeros((4, 9), np.uint32)
    tilelang.compile(k, target="cpu")(a)
    for b in range(4):
        np.testing.assert_array_equal(a[b], draws(7, 1, b * 5 + 1, 9))


def test_cpu_uniform():
    u = _cpu(_per_block(512, 3, 0, dist="uniform"), 512, np.float32)
    np.testing.assert_allclose(u, uniform(draws(3, 0, 0, 512)), rtol=1e-7)
    assert 0 < u.min() and u.max() <= 1
    d = _cpu(_per_block(512, 3, 0, dist="uniform", bit=64), 512, np.float64)
    np.testing.assert_allclose(d, draws(3, 0, 0, 512) * 2.0 ** -32 + 2.0 ** -32, rtol=1e-15)


@pytest.mark.parametrize("bit", [32, 64])
def test_cpu_normal_statistics(bit):
    x = _cpu(_per_block(1 << 14, 11, 0, dist="normal", bit=bit), 1 << 14, np.float32 if bit == 32 else np.float64)
    assert abs(x.mean()) < 0.05 and abs(x.std() - 1) < 0.05
    if bit == 32:   # Box-Muller on two draws: the pair's first value
        w = draws(11, 0, 0, 2)
        inv = 2.3283064e-10
        r = np.sqrt(-2 * np.log(w[0] * inv + inv / 2))
        np.testing.assert_allclose(x[0], r * np.sin(w[1] * inv * 6.2831855 + inv * 3.14159), rtol=1e-4)


def test_draw_is_taken_once_where_written():
    @T.prim_func
    def k(A: T.Tensor((2,), "uint32")):
        with T.Kernel(1, threads=1):
            T.rng_init(5, 0, 0)
            r = T.rng_rand()
            A[0] = r
            A[1] = r
    a = _cpu(k, 2, np.uint32)
    assert a[0] == a[1] == draws(5, 0, 0, 1)[0]


def test_init_inside_a_branch_reaches_later_draws():
    @T.prim_func
    def k(A: T.Tensor((4,), "uint32"), n: T.int32):
        with T.Kernel(4, threads=1) as bx:
            if bx < n:
                T.rng_init(42, 0, bx)
            A[bx] = T.rng_rand()
    a = np.zeros(4, np.uint32)
    tilelang.compile(k, target="cpu")(a, 4)
    np.testing.assert_array_equal(a, [draws(42, 0, b, 1)[0] for b in range(4)])


def test_default_subsequence_is_the_thread_index():
    """rng_init(seed): subsequence tx + bx * threads; the CPU runs a block as thread 0,
    and, in a kernel written per thread, each thread as itself."""
    @T.prim_func
    def k(A: T.Tensor((3, 4), "uint32")):
        with T.Kernel(3, threads=4) as bx:
            tx = T.get_thread_binding()
            T.rng_init(9)
            A[bx, tx] = T.rng_rand()
    a = np.zeros((3, 4), np.uint32)
    tilelang.compile(k, target="cpu")(a)
    for b in range(3):
        for t in range(4):
            assert a[b, t] == draws(9, b * 4 + t, 0, 1)[0]


def test_errors():
    with pytest.raises(TileLangError, match="call T.rng_init"):
        @T.prim_func
        def a(A: T.Tensor((1,), "uint32")):
            with T.Kernel(1, threads=1):
                A[0] = T.rng_rand()
    with pytest.raises(TileLangError, match="one generator family per kernel"):
        @T.prim_func
        def b(A: T.Tensor((1,), "uint32")):
            with T.Kernel(1, threads=1):
                T.rng_init(1)
                T.rng_init(1, generator="curandStateXORWOW_t")
    with pytest.raises(TileLangError, match="bit must be 32 or 64"):
        @T.prim_func
        def c(A: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=1):
                T.rng_init(1)
                A[0] = T.rng_rand_float(16)


def _shared_out(M=1024, threads=128):
    """A T.Parallel loop shared out over the threads, each drawing from its own generator."""
    @T.prim_func
    def k(A: T.Tensor((M,), "float32")):
        with T.Kernel(M // threads, threads=threads) as bx:
            T.rng_init(1234)
            for i in T.Parallel(threads):
                A[bx * threads + i] = T.rng_rand_float()
    return k


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_cuda_source(arch):
    src = build(_per_block(512, 42, 0), arch).source
    assert "unsigned int rng_state[16];" in src and "tl::rng_init((&rng_state[0])" in src
    assert "tl::rng_rand((&rng_state[0]))" in src and "curand" not in src
    src = build(_shared_out(), arch).source
    assert "((int)threadIdx.x)" in src and "tl::rng_uniform(" in src
    assert "+= 128" not in src and "tl_tid" in src   # one iteration per thread, not the whole loop


@needs_sass
def test_cuda_state_stays_in_registers():
    from tilelang.backend.cuda.host.nvrtc import sass
    import re
    for f in (_per_block(512, 42, 0), _per_block(512, 42, 0, dist="normal", bit=64), _shared_out()):
        text = sass(build(f, "sm_90a").binary)
        assert not re.search(r"\b(LDL|STL)\b", text)


@pytest.mark.gpu
@pytest.mark.parametrize("dist,bit", [(None, 32), ("uniform", 32), ("uniform", 64), ("normal", 32), ("normal", 64)])
def test_gpu_matches_cpu(dist, bit):
    import torch
    dt = np.uint32 if dist is None else (np.float32 if bit == 32 else np.float64)
    f = _per_block(1000, 42, 5, dist=dist, bit=bit)
    ref = _cpu(f, 1000, dt)
    out = torch.zeros(1000, dtype=getattr(torch, np.dtype(dt).name), device="cuda")
    tilelang.compile(f, target="cuda")(out)
    if dist == "normal":   # the device's __sincosf / sincospi
        np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=1e-4, atol=1e-5 if bit == 32 else 1e-12)
    else:
        np.testing.assert_array_equal(out.cpu().numpy(), ref)


@pytest.mark.gpu
def test_gpu_threads_draw_their_own_subsequence():
    import torch
    out = torch.zeros(1024, device="cuda")
    tilelang.compile(_shared_out(), target="cuda")(out)
    # thread t of block b draws once from subsequence b * 128 + t (the loop maps i to t)
    want = uniform(np.array([draws(1234, s, 0, 1)[0] for s in range(1024)], np.uint32))
    np.testing.assert_array_equal(out.cpu().numpy(), want)


CURAND_REFERENCE = r"""
#include <curand_kernel.h>
extern "C" __global__ void curand_ref(unsigned* ints, float* unif, double* unifd, float* norm, double* normd,
                                      unsigned long long seed, unsigned long long seq, unsigned long long off) {
  curandStatePhilox4_32_10_t s;
  curand_init(seed, seq, off, &s);
  for (int i = 0; i < 64; ++i) ints[i] = curand(&s);
  for (int i = 0; i < 64; ++i) unif[i] = curand_uniform(&s);
  for (int i = 0; i < 64; ++i) unifd[i] = curand_uniform_double(&s);
  for (int i = 0; i < 64; ++i) norm[i] = curand_normal(&s);
  for (int i = 0; i < 64; ++i) normd[i] = curand_normal_double(&s);
}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("seed,seq,off", [(42, 0, 0), (2 ** 33 + 5, 7, 3), (1, 2 ** 40, 2 ** 35 + 2)])
def test_gpu_equals_curand(seed, seq, off):
    """cuRAND's curandStatePhilox4_32_10_t draws, bit for bit for integers and uniforms
    (when its headers are installed, as the nvidia-curand wheel does)."""
    import glob
    import os
    import torch
    import nvidia
    inc = [p for d in nvidia.__path__ for p in glob.glob(os.path.join(d, "*", "include"))
           if os.path.exists(os.path.join(p, "curand_kernel.h"))]
    if not inc:
        pytest.skip("cuRAND headers not installed")
    try:
        import cupy
    except ImportError:
        pytest.skip("cupy not installed")
    ref_kernel = cupy.RawKernel(CURAND_REFERENCE, "curand_ref", options=tuple(f"-I{p}" for p in inc))
    ints, unif = cupy.zeros(64, cupy.uint32), cupy.zeros(64, cupy.float32)
    unifd, norm, normd = cupy.zeros(64, cupy.float64), cupy.zeros(64, cupy.float32), cupy.zeros(64, cupy.float64)
    ref_kernel((1,), (1,), (ints, unif, unifd, norm, normd, cupy.uint64(seed), cupy.uint64(seq), cupy.uint64(off)))

    @T.prim_func
    def k(I: T.Tensor((64,), "uint32"), U: T.Tensor((64,), "float32"), UD: T.Tensor((64,), "float64"),
          N: T.Tensor((64,), "float32"), ND: T.Tensor((64,), "float64")):
        with T.Kernel(1, threads=1):
            T.rng_init(T.uint64(seed), T.uint64(seq), T.uint64(off))
            for i in T.serial(64):
                I[i] = T.rng_rand()
            for i in T.serial(64):
                U[i] = T.rng_rand_float()
            for i in T.serial(64):
                UD[i] = T.rng_rand_float(64)
            for i in T.serial(64):
                N[i] = T.rng_rand_float(32, "normal")
            for i in T.serial(64):
                ND[i] = T.rng_rand_float(64, "normal")
    outs = [torch.zeros(64, dtype=t, device="cuda") for t in (torch.uint32, torch.float32, torch.float64,
                                                              torch.float32, torch.float64)]
    tilelang.compile(k, target="cuda")(*outs)
    for mine, ref in zip(outs[:3], (ints, unif, unifd)):
        np.testing.assert_array_equal(mine.cpu().numpy(), cupy.asnumpy(ref))
    # kernels build with fast math (approximate logf / sqrtf): normals agree to rounding
    np.testing.assert_allclose(outs[3].cpu().numpy(), cupy.asnumpy(norm), rtol=4e-6, atol=1e-6)
    np.testing.assert_allclose(outs[4].cpu().numpy(), cupy.asnumpy(normd), rtol=1e-12, atol=1e-14)
