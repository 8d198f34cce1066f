"""T.ldg*/T.stg* (global) and T.lds*/T.sts* (shared): explicit-width accesses of raw
32-bit words. The CPU runs them against numpy; the CUDA backend must make them single
vector instructions (LDG.E.128, STS.128, ...) on sm_90a and sm_80."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build

WIDTHS = [(64, 2), (128, 4), (256, 8)]   # bits, float32 elements


def _global_copy(bits, n, N=128, pred=False):
    """Each block moves n floats with one load and one store of `bits`; with `pred`
    only the first half of the blocks read (the rest store zeros)."""
    ld, st = getattr(T, f"ldg{bits}"), getattr(T, f"stg{bits}")

    @T.prim_func
    def k(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(N // n, threads=32) as pid:
            if pred:
                v = ld(X[pid * n:pid * n + n], pred=pid < N // n // 2)
            else:
                v = ld(X[pid * n:pid * n + n])
            st(Y[pid * n:pid * n + n], v)
    return k


def _scalar(N=128):
    @T.prim_func
    def k(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=32) as pid:
            Y[pid] = T.reinterpret(T.ldg32(X[pid], pred=pid < N // 2), T.float32)
    return k


def _store32(N=128):
    @T.prim_func
    def k(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=32) as pid:
            T.stg32(Y[pid], T.reinterpret(X[pid], T.uint32), pred=pid % 2 == 0)
    return k


def _through_shared(bits, n, N=128):
    """global -> registers -> shared (sts) -> registers (lds) -> global, each iteration
    reading the words another one stored: the barrier between is the compiler's."""
    ldg, stg, lds, sts = (getattr(T, f"{op}{bits}") for op in ("ldg", "stg", "lds", "sts"))

    @T.prim_func
    def k(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=N // n) as bx:
            S = T.alloc_shared((N,), "float32")
            for t in T.Parallel(N // n):
                sts(S[t * n:t * n + n], ldg(X[t * n:t * n + n]))
            for t in T.Parallel(N // n):
                j = (t + 1) % (N // n)
                stg(Y[t * n:t * n + n], lds(S[j * n:j * n + n]))
    return k


def _run(kern, N=128):
    x = np.random.rand(N).astype(np.float32)
    y = np.full(N, -1, np.float32)
    kern(x, y)
    return x, y


@pytest.mark.parametrize("bits,n", WIDTHS)
def test_cpu_global_copy(bits, n):
    x, y = _run(tilelang.compile(_global_copy(bits, n), target="cpu"))
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("bits,n", WIDTHS)
def test_cpu_predicated_load_reads_zeros(bits, n):
    x, y = _run(tilelang.compile(_global_copy(bits, n, pred=True), target="cpu"))
    np.testing.assert_array_equal(y[:64], x[:64])
    assert not y[64:].any()


def test_cpu_scalar_load_and_predicated_store():
    x, y = _run(tilelang.compile(_scalar(), target="cpu"))
    np.testing.assert_array_equal(y, np.where(np.arange(128) < 64, x, 0))
    x, y = _run(tilelang.compile(_store32(), target="cpu"))
    np.testing.assert_array_equal(y, np.where(np.arange(128) % 2 == 0, x, -1))


@pytest.mark.parametrize("bits,n", [(32, 1), (64, 2), (128, 4)])
def test_cpu_through_shared(bits, n):
    x, y = _run(tilelang.compile(_through_shared(bits, n), target="cpu"))
    np.testing.assert_array_equal(y, np.roll(x.reshape(-1, n), -1, axis=0).reshape(-1))


def test_words_are_indexable_and_reinterpretable():
    @T.prim_func
    def k(X: T.Tensor((8,), "float16"), Y: T.Tensor((4,), "uint32"), Z: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=1):
            v = T.ldg128(X)             # a whole buffer of 16 bytes
            for w in T.serial(4):
                Y[w] = v[w]
            Z[0] = T.reinterpret(v[1], "float32")
            Z[1] = T.reinterpret(T.ldg32(X[2]), "float32")
    x = np.arange(8).astype(np.float16)
    y, z = np.zeros(4, np.uint32), np.zeros(2, np.float32)
    tilelang.compile(k, target="cpu")(x, y, z)
    words = x.view(np.uint32)
    np.testing.assert_array_equal(y, words)
    np.testing.assert_array_equal(z, [words[1:2].view(np.float32)[0]] * 2)


def test_errors():
    with pytest.raises(TileLangError, match="accesses global memory"):
        @T.prim_func
        def a(X: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                S = T.alloc_shared((4,), "float32")
                T.ldg128(S)
    with pytest.raises(TileLangError, match="moves 16 bytes; the region of `X` holds 8"):
        @T.prim_func
        def b(X: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                T.ldg128(X[0:2])
    with pytest.raises(TileLangError, match="stores a 32-bit value"):
        @T.prim_func
        def c(X: T.Tensor((4,), "float16")):
            with T.Kernel(1, threads=32):
                T.stg32(X[0], X[1])
    with pytest.raises(TileLangError, match="stores 16 bytes from memory"):
        @T.prim_func
        def d(X: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                T.stg128(X[0], X[1])


def _sass(func, arch):
    from tilelang.backend.cuda.host.nvrtc import sass
    return sass(build(func, arch).binary)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_cuda_source(arch):
    src = build(_global_copy(128, 4, pred=True), arch).source
    # the width in the name (the published spelling); a predicate selects the _conditional form
    assert "tl::load_global_128_conditional((&v[0]), (&X[(pid * 4)]), (pid < 16))" in src
    assert "tl::store_global_128((&Y[(pid * 4)]), (&v[0]))" in src
    assert "tl::load_global_32_conditional((&X[pid]), (pid < 64))" in build(_scalar(), arch).source


@needs_sass
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("bits,n", [(64, 2), (128, 4)])
def test_cuda_sass_is_one_vector_access_each(arch, bits, n):
    text = _sass(_global_copy(bits, n), arch)
    assert len(re.findall(rf"LDG\.E\.{bits}\b", text)) == 1 and len(re.findall(rf"STG\.E\.{bits}\b", text)) == 1
    text = _sass(_through_shared(bits, n), arch)
    assert len(re.findall(rf"\bSTS\.{bits}\b", text)) == 1 and len(re.findall(rf"\bLDS\.{bits}\b", text)) == 1
    assert "BAR.SYNC" in text
    assert not re.search(r"\b(LDL|STL)\b", text)   # the words stay in registers


@needs_sass
def test_cuda_256_bits_is_two_128_bit_accesses():
    text = _sass(_global_copy(256, 8), "sm_90a")
    assert len(re.findall(r"LDG\.E\.128\b", text)) == 2 and len(re.findall(r"STG\.E\.128\b", text)) == 2


@pytest.mark.gpu
@pytest.mark.parametrize("bits,n", WIDTHS)
def test_gpu_matches_cpu(bits, n):
    import torch
    for make in (lambda: _global_copy(bits, n), lambda: _global_copy(bits, n, pred=True), _scalar, _store32,
                 lambda: _through_shared(min(bits, 128), min(n, 4))):
        x = torch.rand(128, device="cuda")
        y = torch.full((128,), -1.0, device="cuda")
        tilelang.compile(make(), target="cuda")(x, y)
        xc, yc = x.cpu().numpy(), np.full(128, -1, np.float32)
        tilelang.compile(make(), target="cpu")(xc, yc)
        np.testing.assert_array_equal(y.cpu().numpy(), yc)


def _ldg_kernel(dtype):
    @T.prim_func
    def main(x: T.Tensor((128,), dtype), y: T.Tensor((128,), dtype)):
        with T.Kernel(128, threads=32) as pid:
            y[pid] = T.__ldg(x[pid]) + T.cast(1.0, dtype)
    return main


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_ldg_value_on_the_cpu(dtype):
    import torch
    k = tilelang.compile(_ldg_kernel(dtype), out_idx=[1], target="cpu")
    x = torch.randn(128).to(getattr(torch, dtype))
    assert torch.equal(k(x), x + 1)


@needs_sass
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_ldg_value_reads_through_the_read_only_cache(dtype):
    art = build(_ldg_kernel(dtype))
    assert "__ldg(&(x[pid]))" in art.source
    assert re.search(r"LDG\.E(\.U16)?\.CONSTANT", _sass(_ldg_kernel(dtype), "sm_90a"))


def test_ldg_value_needs_a_global_element():
    with pytest.raises(TileLangError, match="one element of a global tensor"):
        @T.prim_func
        def main(x: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((128,), "float32")
                x[0] = T.__ldg(s[0])


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("bits,lanes", [(64, 2), (128, 4)])
def test_wide_load_reinterpreted_as_a_vector_type_stores_to_a_region(target, bits, lanes):
    import torch
    ldg = {64: T.ldg64, 128: T.ldg128}[bits]
    vt = {2: T.float32x2, 4: T.float32x4}[lanes]

    @T.prim_func
    def k(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(128 // lanes, threads=32) as pid:
            Y[pid * lanes:pid * lanes + lanes] = T.reinterpret(ldg(X[pid * lanes:pid * lanes + lanes]), vt)

    x = torch.randn(128, device=target)
    y = torch.zeros(128, device=target)
    tilelang.compile(k, target=target)(x, y)
    assert torch.equal(x, y)


def test_reinterpret_of_a_tile_checks_the_bit_count():
    with pytest.raises(TileLangError, match="holds 64 bits"):
        @T.prim_func
        def k(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
            with T.Kernel(64, threads=32) as pid:
                Y[pid * 4:pid * 4 + 4] = T.reinterpret(T.ldg64(X[pid * 2:pid * 2 + 2]), T.float32x4)
