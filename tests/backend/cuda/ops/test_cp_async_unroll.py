"""ops/vector_copy.py `thread_split` with `max_exact`: a cp.async copy nest of up to
ASYNC_EXACT_SPLIT (16) vectors a thread is printed as one unrolled run of copies (cp.async
holds no registers while its data are in flight), not a strided loop with its index
arithmetic and branches on every iteration (DeepSeek mHC pre's `fn` tile: 2048 16-byte
vectors on 128 threads). TILELANG_CUDA_CP_ASYNC_UNROLL=0 keeps the strided loop (A/B)."""
import re

import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.ops.vector_copy import thread_split, ASYNC_EXACT_SPLIT
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.emit.test_cooperative_index import _unrolled_nests, _covered


def test_split_limit():
    assert thread_split(2048, 128) == ("strided", False)
    assert thread_split(2048, 128, max_exact=ASYNC_EXACT_SPLIT) == ("exact", 16)
    assert thread_split(4096, 128, max_exact=ASYNC_EXACT_SPLIT) == ("strided", False)   # 32 a thread: still a loop
    assert thread_split(1024, 128, max_exact=ASYNC_EXACT_SPLIT) == ("exact", 8)


def pipelined_rowsum(rows=32, cols=256, k=4, threads=128):
    @T.prim_func
    def main(A: T.Tensor((rows, cols * k), "float32"), B: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_fragment((rows, cols), "float32")
            T.clear(acc)
            for ko in T.Pipelined(k, num_stages=2):
                s = T.alloc_shared((rows, cols), "float32")
                T.copy(A[0, ko * cols], s)
                for i, j in T.Parallel(rows, cols):
                    acc[i, j] += s[i, j]
            T.copy(acc, B)
    return main


def _source(monkeypatch, on):
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_UNROLL", "1" if on else "0")
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    return tilelang.compile(pipelined_rowsum(), target="cuda -arch=sm_90a").get_kernel_source()


@needs_nvrtc
def test_cp_async_nest_unrolled_covers_the_tile(monkeypatch):
    src = _source(monkeypatch, True)
    assert "cp_async" in src and not re.search(r"for \(int tl_i\w* = tl_tid;", src), src
    nests = [(j, n, lines) for j, n, lines in _unrolled_nests(src) if n == 16]
    assert nests, src
    for j, n, lines in nests:   # every 4-float vector of the 32 x 256 tile exactly once
        names = [name for name, _ in lines if not name.startswith("tl_i")][::-1]
        seen = _covered(j, n, lines, 128, names)
        assert sorted(seen) == [(r, c) for r in range(32) for c in range(0, 256, 4)]


@needs_nvrtc
def test_switch_off_keeps_the_strided_loop(monkeypatch):
    src = _source(monkeypatch, False)
    assert re.search(r"for \(int tl_i\w* = tl_tid; tl_i\w* < 2048; tl_i\w* \+= 128\)", src), src


@pytest.mark.gpu
@pytest.mark.parametrize("on", [True, False])
def test_unrolled_cp_async_sums_the_tiles_on_the_gpu(monkeypatch, on):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_UNROLL", "1" if on else "0")
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    kernel = tilelang.compile(pipelined_rowsum(), target="cuda")
    a = torch.randn(32, 1024, device="cuda")
    b = torch.full((32, 256), float("nan"), device="cuda")
    kernel(a, b)
    torch.testing.assert_close(b, a.view(32, 4, 256).sum(1), rtol=1e-5, atol=1e-5)
