"""Copies of a whole shared tile into a global tensor as bulk stores (backend/cuda/
ops/tma_store.py, sm_90a): a box of a tensor map (UTMASTG), or one plain bulk copy (UBLKCP)
when the tile is one contiguous run of the tensor; thread 0 issues, commits and waits
(for the tile to be read, or for the writes when the kernel touches the tensor again).
Results as the threads' copies."""
import re

import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build


def _tiles(M, N, bm=64, bn=64, dt="float16", explicit=False):
    """C = A + 1 through a shared tile per block (edges: M, N need not divide)."""
    @T.prim_func
    def k(A: T.Tensor((M, N), dt), C: T.Tensor((M, N), dt)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), dt)
            T.copy(A[by * bm, bx * bn], S)
            for i, j in T.Parallel(bm, bn):
                S[i, j] = S[i, j] + T.cast(1, dt)
            if explicit:
                T.tma_copy(S, C[by * bm, bx * bn])
                T.tma_store_wait()
            else:
                T.copy(S, C[by * bm, bx * bn])
    return k


def _whole(dt="float32", rows=32, cols=64):
    """C = 2 * A for a tensor that is one shared tile: one contiguous bulk copy."""
    @T.prim_func
    def k(A: T.Tensor((rows, cols), dt), C: T.Tensor((rows, cols), dt)):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((rows, cols), dt)
            T.copy(A, S)
            for i, j in T.Parallel(rows, cols):
                S[i, j] = S[i, j] * T.cast(2, dt)
            T.copy(S, C)
    return k


def _store_then_read(n=64):
    """The kernel reads the tensor it stored into: the store's writes are waited for."""
    @T.prim_func
    def k(A: T.Tensor((n, n), "float32"), C: T.Tensor((n, n), "float32"), D: T.Tensor((n, n), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((n, n), "float32")
            T.copy(A, S)
            T.copy(S, C[0:n, 0:n])
            for i, j in T.Parallel(n, n):
                D[i, j] = C[i, (j + 1) % n]
    return k


def _src(func, arch="sm_90a", config=None):
    return tilelang.lower(func, target={"kind": "cuda", "arch": arch}, pass_configs=config).kernel_source


def test_tile_store_is_one_tensor_map_box():
    art = tilelang.lower(_tiles(200, 192), target={"kind": "cuda", "arch": "sm_90a"})
    src = art.kernel_source
    assert re.search(r"tl::fence_proxy_async\(\);\n\s*__syncthreads\(\);\n\s*if \(tl_tid == 0\) \{\n\s*"
                     r"tl::tma_store\(&C_desc, S, \(bx \* 64\), \(by \* 64\)\);\n\s*tl::tma_store_arrive\(\);\n\s*"
                     r"tl::tma_store_wait<0, true>\(\);", src)
    assert "C[" not in src   # no thread stores into C
    (spec,) = art.meta["kernels"][0]["tmaps"]
    assert spec["box"] == [64, 64] and spec["swizzle"] == 0 and spec["dims"] == ["192", "200"]


def test_explicit_tma_copy_store_is_the_same_bulk_store():
    src = _src(_tiles(128, 128, explicit=True))
    assert "tl::tma_store(&C_desc, S, (bx * 64), (by * 64));" in src and "tl::tma_store_arrive();" in src


def test_a_whole_contiguous_tensor_is_one_plain_bulk_copy():
    art = tilelang.lower(_whole(), target={"kind": "cuda", "arch": "sm_90a"})
    assert "tl::tma_store_bulk(C + 0, S, 8192);" in art.kernel_source
    assert not art.meta["kernels"][0]["tmaps"] and "CUtensorMap" not in art.kernel_source


def test_a_tensor_the_kernel_reads_again_is_waited_for():
    src = _src(_store_then_read())
    assert "tl::tma_store_wait<0, false>();" in src and "tl::tma_store_wait<0, true>();" not in src


def _fallbacks():
    @T.prim_func
    def part_of_tile(A: T.Tensor((64, 64), "float16"), C: T.Tensor((32, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A, S)
            T.copy(S[0:32, :], C)

    @T.prim_func
    def narrow_rows(A: T.Tensor((64, 4), "float16"), C: T.Tensor((64, 4), "float16")):   # 8-byte rows
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 4), "float16")
            T.copy(A, S)
            T.copy(S, C)

    @T.prim_func
    def cast_on_the_way(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A, S)
            T.copy(S, C)
    @T.prim_func
    def unaligned_column(A: T.Tensor((64, 24), "float32"), C: T.Tensor((64, 24), "float32")):
        # a box whose first column is 12 bytes into a row: the hardware's illegal
        # instruction (fuzz program #969 of seed 1)
        with T.Kernel(3, 4, threads=128) as (bx, by):
            S = T.alloc_shared((16, 4), "float32")
            T.copy(A[by * 16, bx * 8 + 3], S)
            T.copy(S, C[by * 16:by * 16 + 16, bx * 8 + 3:bx * 8 + 7])
    return [part_of_tile, narrow_rows, cast_on_the_way, unaligned_column]


@pytest.mark.parametrize("k", _fallbacks(), ids=lambda k: k.name)
def test_what_a_bulk_store_cannot_do_stays_thread_stores(k):
    assert "tma_store" not in _src(k)


def test_box_origins_aligned_to_16_bytes_only():
    from tilelang.ir import expr as E
    from tilelang.backend.cuda.ops.vector_access import offset_aligned16
    bx, k = E.Var("bx"), E.Var("k")
    assert offset_aligned16(bx * 8 + 4, 4) and offset_aligned16(k * 32, 2)
    assert not offset_aligned16(bx * 8 + 3, 4) and not offset_aligned16(k * 4, 2)
    assert offset_aligned16(E.binop("//", bx, 2), 16)          # any integer, of 16-byte elements
    assert not offset_aligned16(E.binop("//", bx, 3), 4)       # bx // 3 may be odd
    assert offset_aligned16(E.binop("//", bx, 3) * 4, 4)


def test_sm80_and_disabled_tma_keep_thread_stores():
    assert "tma_store" not in _src(_tiles(128, 128), "sm_80")
    assert "tma_store" not in _src(_tiles(128, 128), config={"tl.disable_tma_lower": True})


@needs_sass
def test_sass():
    from tilelang.backend.cuda.host.nvrtc import sass
    assert "UTMASTG.2D" in sass(build(_tiles(200, 192)).binary)
    assert "UBLKCP.G.S" in sass(build(_whole()).binary)


def _ref_tiles(a):
    return a + 1


@pytest.mark.parametrize("explicit", [False, True])
@pytest.mark.parametrize("M,N", [(128, 128), (200, 192)])
def test_cpu_backend_reference(M, N, explicit):
    k = tilelang.compile(_tiles(M, N, explicit=explicit), target="cpu")
    a = torch.randn(M, N).half()
    c = torch.zeros(M, N).half()
    k(a, c)
    torch.testing.assert_close(c, _ref_tiles(a))


@pytest.mark.gpu
@pytest.mark.parametrize("explicit", [False, True])
@pytest.mark.parametrize("M,N", [(128, 128), (200, 192)])
def test_tile_stores_on_gpu(M, N, explicit):
    k = tilelang.compile(_tiles(M, N, explicit=explicit), target="cuda")
    assert "tl::tma_store(" in k.get_kernel_source()
    a = torch.randn(M, N, device="cuda").half()
    c = torch.full((M, N), 7.0, device="cuda").half()
    k(a, c)
    torch.testing.assert_close(c, _ref_tiles(a))


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["float32", "float16", "int8"])
def test_whole_tensor_bulk_copy_on_gpu(dt):
    k = tilelang.compile(_whole(dt), target="cuda")
    assert "tl::tma_store_bulk(" in k.get_kernel_source()
    a = (torch.randn(32, 64, device="cuda") * 20).to(getattr(torch, dt))
    c = torch.zeros_like(a)
    k(a, c)
    torch.testing.assert_close(c, a * 2)


@pytest.mark.gpu
def test_store_then_read_on_gpu():
    k = tilelang.compile(_store_then_read(), target="cuda")
    a = torch.randn(64, 64, device="cuda")
    c, d = torch.zeros_like(a), torch.zeros_like(a)
    k(a, c, d)
    torch.testing.assert_close(c, a)
    torch.testing.assert_close(d, torch.roll(a, -1, dims=1))


@pytest.mark.gpu
def test_unaligned_box_column_on_gpu():
    """The fuzz program that raised an illegal instruction: now the threads store."""
    (k,) = [f for f in _fallbacks() if f.name == "unaligned_column"]
    kern = tilelang.compile(k, target="cuda")
    a = torch.randn(64, 24, device="cuda")
    c = torch.zeros_like(a)
    kern(a, c)
    want = torch.zeros_like(a)
    for bx in range(3):
        want[:, bx * 8 + 3:bx * 8 + 7] = a[:, bx * 8 + 3:bx * 8 + 7]
    torch.testing.assert_close(c, want)
