"""`T.copy(G[...], S, prefer_instruction="tma")` on sm_90a (backend/cuda/ops/tma_load_sync.py):
one bulk load of the whole shared tile (a tensor-map box zero-filling what lies outside
the tensor, or a plain bulk copy of a contiguous run) that every thread waits for on the
kernel's copy mbarrier (phase bit per completion). Results as the threads' copies."""
import pytest
import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build


def _add(M, N, bm=64, bn=64, prefer="tma"):
    """C = A + B through shared tiles loaded with prefer_instruction, twice per block
    (the second load of each tile reuses the barrier at the next phase)."""
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), "float32")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for t in T.serial(2):
                if t == 0:
                    T.copy(A[by * bm, bx * bn], S, prefer_instruction=prefer)
                else:
                    T.copy(B[by * bm, bx * bn], S, prefer_instruction=prefer)
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] += S[i, j]
            T.copy(acc, C[by * bm, bx * bn])
    return k


def _src(func, arch="sm_90a"):
    return tilelang.lower(func, target={"kind": "cuda", "arch": arch}).kernel_source


def test_boxes_wait_on_the_copy_barrier():
    src = _src(_add(200, 192))
    assert "tl::mbar_init(tl_copy_bar, 1);" in src and "unsigned tl_copy_phase = 0u;" in src
    assert src.count("tl::tma_load_2d(S, &A_desc, tl_copy_bar, (bx * 64), (by * 64));") == 1
    assert src.count("tl::tma_load_2d(S, &B_desc, tl_copy_bar, (bx * 64), (by * 64));") == 1
    assert src.count("tl::mbar_wait(tl_copy_bar, tl_copy_phase);") == 2 and src.count("tl_copy_phase ^= 1u;") == 2
    assert "A[" not in src and "B[" not in src   # no thread loads


def test_rows_spanning_the_tensor_are_one_plain_bulk_copy():
    src = _src(_add(256, 64))   # full rows, every block inside the tensor: contiguous runs
    assert "tl::tma_load_bulk(S, A + ((by * 64) * 64), 16384, tl_copy_bar);" in src and "CUtensorMap" not in src


def test_without_the_preference_or_before_sm90_threads_copy():
    assert "tma_load" not in _src(_add(128, 128, prefer=None))
    assert "tma_load" not in _src(_add(128, 128), "sm_80")


@needs_sass
def test_sass():
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(build(_add(200, 192)).binary)
    assert "UTMALDG.2D" in text and "SYNCS.PHASECHK" in text
    assert "UBLKCP.S.G" in sass(build(_add(256, 64)).binary)


@pytest.mark.parametrize("M,N", [(128, 128), (200, 192)])
def test_cpu_backend_reference(M, N):
    k = tilelang.compile(_add(M, N), target="cpu")
    a, b, c = torch.randn(M, N), torch.randn(M, N), torch.zeros(M, N)
    k(a, b, c)
    torch.testing.assert_close(c, a + b)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N", [(128, 128), (200, 192), (256, 64)])
def test_synchronous_tma_loads_on_gpu(M, N):
    k = tilelang.compile(_add(M, N), target="cuda")
    assert "tma_load" in k.get_kernel_source()
    a, b = torch.randn(M, N, device="cuda"), torch.randn(M, N, device="cuda")
    c = torch.zeros(M, N, device="cuda")
    k(a, b, c)
    torch.testing.assert_close(c, a + b)


def test_plain_sm90_is_enough():
    assert "tl::tma_load_2d(" in _src(_add(200, 192), "sm_90")


def _pointer_kernel(shape, tile):
    @T.prim_func
    def k(ptrs: T.Tensor((1,), T.ptr), out: T.Tensor(tile, "float16")):
        with T.Kernel(1, threads=128):
            src = T.make_tensor(ptrs[0], shape, "float16")
            S = T.alloc_shared(tile, "float16")
            T.copy(src[(0,) * len(shape)], S, prefer_instruction="tma")
            T.copy(S, out, prefer_instruction="sync")
    return k


def test_a_tensor_bound_in_the_kernel_is_loaded_by_a_plain_bulk_copy():
    src = _src(_pointer_kernel((256,), (256,)))
    assert "tl::tma_load_bulk(S, " in src and "CUtensorMap" not in src
    assert "tma_store" not in src   # prefer_instruction="sync": the threads store


def test_a_tensor_bound_in_the_kernel_cannot_have_a_tensor_map():
    from tilelang.ir.errors import TileLangError
    with pytest.raises(TileLangError, match="bound inside the device function body"):
        _src(_pointer_kernel((16, 32), (16, 16)))


def test_disable_tma_on_a_copy_keeps_thread_stores():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float32")
            T.copy(A, S)
            T.copy(S, C, disable_tma=True)
    assert "tma_store" not in _src(k)
