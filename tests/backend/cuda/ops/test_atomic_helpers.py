"""The scalar atomic helpers (include/tl_cuda/atomic.h) under the published names, the
memory order as a trailing argument, and every integer width CUDA can add: signed 64-bit
adds and bitwise ops go through the unsigned instructions (CUDA has no signed ones)."""
import re

import pytest
import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build


def _kernel(dt):
    @T.prim_func
    def k(A: T.Tensor((64,), dt), B: T.Tensor((4,), dt), P: T.Tensor((64,), dt)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                T.atomic_add(B[0], A[i])
                T.atomic_max(B[1], A[i], memory_order="acquire")
                T.atomic_or(B[2], A[i], memory_order="release")
                P[i] = T.atomic_xor(B[3], A[i], return_prev=True)
    return k


@needs_nvrtc
@pytest.mark.parametrize("dt", ["int32", "uint32", "int64", "uint64"])
def test_integer_atomics_compile(dt):
    src = build(_kernel(dt)).source
    assert re.search(r"AtomicAdd\(&B\[0\], \([^;]*\)\);", src)
    assert re.search(r"AtomicMax\(&B\[1\], [^;]*, 2\);", src)
    assert re.search(r"AtomicOr\(&B\[2\], [^;]*, 3\);", src)
    assert "= AtomicXorRet(&B[3]" in src


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("dt", ["int32", "int64"])
def test_integer_atomics(target, dt):
    tdt = getattr(torch, dt)
    a = torch.arange(-20, 44, dtype=tdt, device=target) * 3
    b = torch.zeros(4, dtype=tdt, device=target)
    p = torch.zeros(64, dtype=tdt, device=target)
    tilelang.compile(_kernel(dt), target=target)(a, b, p)
    ac = a.cpu()
    assert b[0].item() == ac.sum().item() and b[1].item() == ac.max().item()
    orv = xor = 0
    for x in ac.tolist():
        orv, xor = orv | x, xor ^ x
    assert b[2].item() == orv and b[3].item() == xor
