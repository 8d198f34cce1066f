"""emit/kernel.py `cooperative`: a copy nest split exactly over the threads (unrolled
`tl_j` loop) writes each loop variable whose extent divides the remaining thread count
from `tl_tid` alone (`(tl_tid) % 8`, not `(tl_j * 256 + tl_tid) % 8`), the same
expression in every unrolled copy, which nvcc then computes once (the im2col tile's
channel and tap arithmetic: 394 -> 257 instructions per iteration of the convolution
autotune loop). Checked by evaluating the printed index lines for every thread and
copy: each element of the nest exactly once."""
import itertools
import re

import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass


def copy3d(shape, threads, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor(shape, dtype), B: T.Tensor(shape, dtype)):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared(shape, dtype)
            T.copy(A, s)
            T.copy(s, B)
    return main


def _unrolled_nests(src):
    """[(count, threads, [(name, C expression)])] of the exactly split nests."""
    out = []
    for m in re.finditer(r"for \(int (tl_j\w*) = 0; \1 < (\d+); \+\+\1\) \{\n((?:\s*const int \w+ = .*;\n)+)", src):
        j, n, body = m.group(1), int(m.group(2)), m.group(3)
        lines = re.findall(r"const int (\w+) = (.*);", body)
        out.append((j, n, lines))
    return out


def _covered(j, n, lines, threads, names):
    seen = []
    for jv, tid in itertools.product(range(n), range(threads)):
        env = {j: jv, "tl_tid": tid}
        for name, expr in lines:
            env[name] = eval(expr.replace("/", "//"), {}, dict(env))   # non-negative: C's / and % are Python's
        seen.append(tuple(env[x] for x in names))
    return seen


@needs_nvrtc
@pytest.mark.parametrize("shape,threads,V", [((4, 16, 64), 128, 8), ((64, 64), 256, 8), ((8, 6, 32), 96, 8)])
def test_every_element_once_and_thread_only_indices(shape, threads, V):
    src = tilelang.compile(copy3d(shape, threads), target="cuda -arch=sm_90a").get_kernel_source()
    nests = _unrolled_nests(src)
    assert nests, src
    for j, n, lines in nests:
        names = [name for name, _ in lines if not name.startswith("tl_i")][::-1]   # printed innermost first
        assert len(names) == len(shape)
        seen = _covered(j, n, lines, threads, names)
        want = list(itertools.product(*[range(0, d, V if k == len(shape) - 1 else 1) for k, d in enumerate(shape)]))
        assert sorted(seen) == sorted(want)
        # the innermost index reads the thread alone
        inner = dict(lines)[names[-1]]
        assert j not in inner and "tl_tid" in inner, lines


def test_thread_split_is_one_rule_for_the_printer_and_the_copy_forms():
    # ops/vector_copy.py thread_split: read by emit/kernel.py cooperative and plan/copy_forms.py
    from tilelang.backend.cuda.ops.vector_copy import thread_split
    assert thread_split(1024, 128) == ("exact", 8)
    assert thread_split(2048, 128) == ("strided", False)     # 16 a thread: a strided loop
    assert thread_split(500, 128) == ("guarded", 4)          # uneven, at most 4 a thread: unrolled, bound-checked
    assert thread_split(128, 256) == ("guarded", 1)          # fewer vectors than threads
    assert thread_split(500, 128, guarded=False) == ("strided", True)   # TILELANG_CUDA_GUARDED_SPLIT=0
    assert thread_split(600, 128) == ("strided", False)
    assert thread_split(None, 128) == ("strided", False)     # a dynamic extent


def _guarded_nests(src):
    """[(tl_j, count, index lines, guard)] of the nests split with a bound check."""
    pat = (r"for \(int (tl_j\w*) = 0; \1 < (\d+); \+\+\1\) \{\n((?:\s*const int \w+ = .*;\n)+)"
           r"\s*if \((.*)\) \{\n")
    return [(m.group(1), int(m.group(2)), re.findall(r"const int (\w+) = (.*);", m.group(3)), m.group(4))
            for m in re.finditer(pat, src)]


@needs_nvrtc
@pytest.mark.parametrize("shape,threads", [((4, 256), 256), ((5, 8, 64), 128)])
def test_uneven_split_is_unrolled_with_a_bound_check(shape, threads):
    # 128 vectors on 256 threads, 320 on 128: ("guarded", n), every element once, none past the end
    V = 8
    src = tilelang.compile(copy3d(shape, threads), target="cuda -arch=sm_90a").get_kernel_source()
    nests = _guarded_nests(src)
    assert nests and "tl_i = tl_tid" not in src, src   # no strided loop left
    for j, n, lines, guard in nests:
        names = [name for name, _ in lines if not name.startswith("tl_i")][::-1]
        seen = []
        for jv, tid in itertools.product(range(n), range(threads)):
            env = {j: jv, "tl_tid": tid}
            for name, expr in lines:
                env[name] = eval(expr.replace("/", "//"), {}, dict(env))
            if eval(guard.replace("||", " or "), {}, dict(env)):
                seen.append(tuple(env[x] for x in names))
        want = list(itertools.product(*[range(0, d, V if k == len(shape) - 1 else 1) for k, d in enumerate(shape)]))
        assert sorted(seen) == sorted(want)


def test_uneven_split_switch(monkeypatch):
    # TILELANG_CUDA_GUARDED_SPLIT=0: the strided loop of before
    from tilelang.backend.cuda.options import CudaOptions
    monkeypatch.setenv("TILELANG_CUDA_GUARDED_SPLIT", "0")
    assert CudaOptions.from_config(None, "sm_90a").guarded_split is False
    monkeypatch.delenv("TILELANG_CUDA_GUARDED_SPLIT")
    assert CudaOptions.from_config(None, "sm_90a").guarded_split is True


def add_tiles(M, N, block_M, block_N, threads, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(N // block_N, M // block_M, threads=threads) as (bx, by):
            As = T.alloc_shared((block_M, block_N), dtype)
            Bs = T.alloc_shared((block_M, block_N), dtype)
            c = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], As)
            T.copy(B[by * block_M, bx * block_N], Bs)
            for i, j in T.Parallel(block_M, block_N):
                c[i, j] = As[i, j] + Bs[i, j]
            T.copy(c, C[by * block_M, bx * block_N])
    return main


@needs_sass
def test_uneven_split_keeps_both_tiles_loads_in_flight():
    # a 4 x 256 fp16 tile on 256 threads (128 vectors): B's load is issued before A's data
    # arrive (the strided loop stored A's vector to shared memory before loading B's)
    from tests.backend.cuda.helpers import build
    from tilelang.backend.cuda.host.nvrtc import sass
    ops = re.findall(r"\b(LDG|STS)\.", sass(build(add_tiles(64, 4096, 4, 256, 256)).binary))
    assert ops[:3] == ["LDG", "LDG", "STS"], ops
