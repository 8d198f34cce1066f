"""Register tiles too large for any GPU's shared memory stay in registers (spilling to
local memory) instead of being rejected, and their cross-warp reduction combines rows in
rounds whose shared scratch is bounded (reduce_lowering.round_rows)."""
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.ops import reduce as reduce_lowering
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build


def _huge_reduce(rows, width=512):
    @T.prim_func
    def k():
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((rows, width), T.float32)
            dst = T.alloc_fragment((rows,), T.float32)
            T.fill(src, 1.0)
            T.reduce_sum(src, dst, dim=1)
    return k


def test_fragment_larger_than_shared_memory_is_lowered():
    """16385 x 512 floats (33 MB): was 'needs 33622144 bytes of shared memory'."""
    art = tilelang.lower(_huge_reduce(16385), target={"kind": "cuda", "arch": "sm_80"})
    src = art.kernel_source
    assert "float src[65540];" in src                      # registers / local memory, not shared
    assert "for (int tl_c0 = 0; tl_c0 < 16385; tl_c0 += 2048)" in src   # bounded rounds
    assert art.meta.get("smem", 0) <= 2 * reduce_lowering.ROUND_BYTES + 1024 or "smem" not in art.meta


def _rowsum(M, N, threads, kind):
    op = {"sum": T.reduce_sum, "max": T.reduce_max}[kind]

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, N), "float32")
            dst = T.alloc_fragment((M,), "float32")
            T.copy(A, src)
            op(src, dst, dim=1)
            T.copy(dst, B)
    return k


@needs_nvrtc
def test_rounds_compile(monkeypatch):
    monkeypatch.setattr(reduce_lowering, "ROUND_BYTES", 64)   # 2 rows per round of 8 warps
    src = build(_rowsum(16, 1024, 256, "sum")).source
    assert "tl_c0 += 2" in src


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["sum", "max"])
@pytest.mark.parametrize("round_bytes", [64, 96, 32768])
def test_rounds_match_torch(monkeypatch, kind, round_bytes):
    monkeypatch.setattr(reduce_lowering, "ROUND_BYTES", round_bytes)
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    k = tilelang.compile(_rowsum(15, 1024, 256, kind), out_idx=-1, target="cuda")
    a = torch.randn(15, 1024, device="cuda")
    ref = a.sum(1) if kind == "sum" else a.amax(1)
    torch.testing.assert_close(k(a), ref, atol=1e-3, rtol=1e-4)
