"""Vector atomic adds (backend/cuda/ops/vector_atomic.py): a tile or T.Parallel atomic add
into consecutive global elements is one instruction per 4 floats (sm_90) or per pair of
16-bit values, with memory orders kept as fences; results as the scalar form's."""
import re

import pytest
import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build


def _kernel(dt, order=None):
    @T.prim_func
    def k(A: T.Tensor((128, 128), dt), C: T.Tensor((128, 128), dt)):
        with T.Kernel(2, threads=128) as bx:
            A_local = T.alloc_fragment((64, 64), dt)
            T.copy(A[bx * 64:bx * 64 + 64, 0:64], A_local)
            T.atomic_add(C[bx * 64:bx * 64 + 64, 0:64], A_local, memory_order=order)   # a register tile
            for i, j in T.Parallel(64, 64):
                T.atomic_add(C[bx * 64 + i, j + 64], A[bx * 64 + i, j + 64], memory_order=order)  # memory
    return k


def _sass_atomics(arch, dt, order=None):
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(build(_kernel(dt, order), arch).binary)
    return re.findall(r"\b(?:RED|ATOM)G?\.E\.ADD\.([A-Z0-9x]+)", text), text.count("MEMBAR")


@needs_sass
@pytest.mark.parametrize("dt,sass_type", [("float32", "F32x4"), ("float16", "F16x2"), ("bfloat16", "BF16x2")])
def test_one_instruction_per_vector(dt, sass_type):
    kinds, fences = _sass_atomics("sm_90a", dt)
    assert kinds and set(kinds) == {sass_type} and fences == 0


@needs_sass
def test_memory_orders_keep_their_fences():
    kinds, fences = _sass_atomics("sm_90a", "float32", "release")
    assert set(kinds) == {"F32x4"} and fences > 0


@needs_sass
def test_float_vectors_need_sm90():
    kinds, _ = _sass_atomics("sm_80", "float32")
    assert set(kinds) == {"F32"}


@pytest.mark.gpu
@pytest.mark.parametrize("order", [None, "release"])
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_vector_atomic_adds_match_torch(dt, order):
    k = tilelang.compile(_kernel(dt, order), target="cuda")
    a = torch.randn(128, 128, device="cuda").to(getattr(torch, dt))
    c = torch.randn(128, 128, device="cuda").to(getattr(torch, dt))
    ref = c.float()
    ref[:, :128] += a.float()
    k(a, c)
    tol = 1e-5 if dt == "float32" else 2e-2
    torch.testing.assert_close(c.float(), ref, rtol=tol, atol=tol)


def _broadcasts():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"), O: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=128):
            X = T.alloc_fragment((64, 64), "float32")
            for i, j in T.Parallel(64, 64):
                X[i, j] = A[i, 0]              # one element of each row, to every column
            T.copy(X, B)
            for i in T.Parallel(64):
                T.atomic_add(O[0], A[i, 1])    # every element into one
    return k


@needs_sass
def test_an_index_without_the_loop_variable_is_not_vectorized():
    # before: X[i, j] = A[i, 0] read A[i, 0:4] as one vector, and 64 adds into O[0] became
    # AtomicAddx4 into O[0:4] (the published test_atomic_add_contended: "lost updates")
    kinds, _ = _sass_atomics_of(_broadcasts())
    assert set(kinds) == {"F32"}


def _sass_atomics_of(f):
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(build(f).binary)
    return re.findall(r"\b(?:RED|ATOM)G?\.E\.ADD\.([A-Z0-9x]+)", text), text


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_broadcast_reads_and_contended_atomics(target):
    a = torch.randn(64, 64, device=target)
    b = torch.zeros(64, 64, device=target)
    o = torch.zeros(4, device=target)
    tilelang.compile(_broadcasts(), target=target)(a, b, o)
    torch.testing.assert_close(b, a[:, :1].expand(64, 64))
    torch.testing.assert_close(o, torch.tensor([a[:, 1].sum().item(), 0, 0, 0], device=target), rtol=1e-5, atol=1e-4)
