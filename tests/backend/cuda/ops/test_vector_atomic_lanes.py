"""The explicit vector atomics (backend/cuda/ops/vector_atomic.py emit_lanes):
`T.atomic_addx{n}(C[i, j], V[k, l])` is one `AtomicAddx{n}` (16-bit quads: two pair
atomics), and with `return_prev=True` one `AtomicAddx{n}Ret` whose previous lanes land in
the result tile; memory orders are the trailing argument; bf16 compiles for sm_75."""
import re

import pytest
import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build


def _ret(n, dt, order=None):
    @T.prim_func
    def k(Dst: T.Tensor((n,), dt), Val: T.Tensor((n,), dt), Prev: T.Tensor((n,), dt)):
        with T.Kernel(1, threads=1):
            Prev[0:n] = (T.atomic_addx2 if n == 2 else T.atomic_addx4)(Dst[0:n], Val[0:n], return_prev=True,
                                                                      memory_order=order)
    return k


def _per_thread_ret(dt):
    # every thread adds ones to the same four elements: the previous lanes it gets back
    # are the counts of the adds before its own, 0..63 once each
    @T.prim_func
    def k(Dst: T.Tensor((4,), dt), Prev: T.Tensor((64, 4), dt)):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            if tx < 64:   # per thread (a block-level statement would run once)
                Prev[tx, 0:4] = T.atomic_addx4(Dst[0:4], 1.0, return_prev=True)
    return k


def _quad16(dt):
    @T.prim_func
    def k(A: T.Tensor((16,), dt), B: T.Tensor((16,), dt)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(4):
                T.atomic_addx4(B[i * 4], A[i * 4], memory_order="release")
    return k


def _sass_atomics(f, arch="sm_90a"):
    from tilelang.backend.cuda.host.nvrtc import sass
    return re.findall(r"\b(?:RED|ATOM)G?\.E\.ADD\.([A-Z0-9x]+)", sass(build(f, arch).binary))


@needs_nvrtc
@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_return_prev_is_one_vector_atomic(n, dt):
    src = build(_ret(n, dt, "acq_rel")).source
    call = re.search(rf"AtomicAddx{n}Ret\(&Dst\[0\], [^;]*, 4\)", src)
    assert call, src
    assert src.count("AtomicAdd") == 1
    if n == 2 and dt != "float32":   # the pair as its 32-bit word into the result tile
        assert "tl::to_uint1(AtomicAddx2Ret(" in src


@needs_sass
@pytest.mark.parametrize("n,dt,kind", [(4, "float32", "F32x4"), (2, "float32", "F32x2"),
                                       (2, "float16", "F16x2"), (4, "bfloat16", "BF16x2")])
def test_return_prev_sass(n, dt, kind):
    assert set(_sass_atomics(_ret(n, dt))) == {kind}


@needs_sass
def test_float_vectors_fall_back_to_scalars_below_sm90():
    assert set(_sass_atomics(_ret(4, "float32"), "sm_80")) == {"F32"}


@needs_sass
@pytest.mark.parametrize("dt,kind", [("float16", "F16x2"), ("bfloat16", "BF16x2")])
def test_16bit_quads_are_two_pair_atomics(dt, kind):
    src = build(_quad16(dt)).source
    assert re.search(r"AtomicAddx4\(&B\[\(i \* 4\)\], [^;]*, 3\);", src), src
    assert set(_sass_atomics(_quad16(dt))) == {kind}


@needs_nvrtc
def test_bf16_atomics_compile_for_sm75():
    # cuda_bf16.h adds bf16 (and bf16 pairs) with a compare-and-swap loop below sm_90
    src = build(_quad16("bfloat16"), "sm_75").source + build(_ret(4, "bfloat16"), "sm_75").source
    assert "AtomicAddx4(" in src and "AtomicAddx4Ret(" in src


def _check_ret(target, n, dt):
    tdt = getattr(torch, dt)
    dst = torch.arange(1, n + 1, dtype=tdt, device=target)
    val = torch.arange(1, n + 1, dtype=tdt, device=target) * 10
    prev = torch.zeros(n, dtype=tdt, device=target)
    tilelang.compile(_ret(n, dt, "release"), target=target)(dst, val, prev)
    ref = torch.arange(1, n + 1, dtype=torch.float32)
    torch.testing.assert_close(prev.float().cpu(), ref)
    torch.testing.assert_close(dst.float().cpu(), ref * 11)


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_return_prev_values(target, n, dt):
    _check_ret(target, n, dt)


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_per_thread_return_prev_is_atomic(target, dt):
    tdt = getattr(torch, dt)
    dst = torch.zeros(4, dtype=tdt, device=target)
    prev = torch.full((64, 4), -1, dtype=tdt, device=target)
    tilelang.compile(_per_thread_ret(dt), target=target)(dst, prev)
    assert dst.float().cpu().tolist() == [64.0] * 4
    for lane in range(4):   # each lane is atomic on its own: every count once
        assert sorted(prev[:, lane].float().cpu().tolist()) == [float(c) for c in range(64)]


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_16bit_quads_add(target, dt):
    tdt = getattr(torch, dt)
    a = torch.arange(16, dtype=tdt, device=target)
    b = torch.ones(16, dtype=tdt, device=target)
    tilelang.compile(_quad16(dt), target=target)(a, b)
    torch.testing.assert_close(b.float().cpu(), torch.arange(16, dtype=torch.float32) + 1)
