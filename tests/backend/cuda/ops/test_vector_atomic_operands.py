"""A vector atomic add whose values are consecutive elements of one buffer
(`value = S[i, j]; T.atomic_add(B[.., j], value)` in a vectorized T.Parallel) reads them
with one wide load declared under the user's name (backend/cuda/ops/vector_copy.py):
LDS.128 instead of four LDS.32."""
import re

import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build


def _kernel(K=8, M=128, N=128, bm=32, bn=32):
    @T.prim_func
    def k(A: T.Tensor((K, M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M // bm, N // bn, K, threads=32) as (bx, by, bz):
            S = T.alloc_shared((bm, bn), "float32")
            T.copy(A[bz, bx * bm:(bx + 1) * bm, by * bn:(by + 1) * bn], S)
            for i, j in T.Parallel(bm, bn):
                value = S[i, j]
                T.atomic_add(B[bx * bm + i, by * bn + j], value)
    return k


@needs_sass
def test_one_wide_shared_load_per_vector_atomic():
    from tilelang.backend.cuda.host.nvrtc import sass
    art = build(_kernel())
    assert "const float4 value = *reinterpret_cast<const float4*>(&S[" in art.source
    assert "AtomicAddx4(" in art.source and "value.x, value.y, value.z, value.w" in art.source
    text = sass(art.binary)
    assert re.search(r"\bLDS\.128\b", text) and not re.search(r"\bLDS\s", text)


@pytest.mark.gpu
def test_wide_operand_loads_on_the_gpu():
    import torch
    a = torch.randn(8, 128, 128, device="cuda")
    b = torch.zeros(128, 128, device="cuda")
    tilelang.compile(_kernel(), target="cuda")(a, b)
    torch.testing.assert_close(b, a.sum(0), atol=1e-4, rtol=1e-4)
