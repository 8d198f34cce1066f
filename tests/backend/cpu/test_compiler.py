"""The CPU backend's C++ compile: the precompiled header of tl_cpu.h, and the flags that keep
the host compiler's known wrong code away."""
import os
import subprocess

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cpu import compiler as C

needs_gxx = pytest.mark.skipif("g++" not in os.path.basename(os.path.realpath(C.find_compiler())),
                               reason="precompiled headers are built for g++ only")


def _add_one(n=64):
    @T.prim_func
    def add_one(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                B[i] = A[i] + 1.0
    return add_one


@needs_gxx
def test_the_header_is_precompiled_once_and_used(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_PCH_DIR", str(tmp_path))
    cxx, flags = C.find_compiler(), C.flags()
    d = C.precompiled_header_dir(cxx, flags)
    assert d is not None and os.path.exists(os.path.join(d, "tl_cpu.h.gch"))
    before = os.stat(os.path.join(d, "tl_cpu.h.gch")).st_mtime_ns
    assert C.precompiled_header_dir(cxx, flags) == d   # the second compile reuses it
    assert os.stat(os.path.join(d, "tl_cpu.h.gch")).st_mtime_ns == before
    # g++ -H marks a header read from a precompiled file with "!"
    src = tmp_path / "k.cpp"
    src.write_text('#include "tl_cpu.h"\nint f() { return 1; }\n')
    r = subprocess.run([cxx, f"-I{d}", *flags, "-H", "-c", str(src), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0].startswith("! ") and "tl_cpu.h.gch" in r.stderr.splitlines()[0]
    # other flags (another -O level, a user's compile_flags) get their own header
    assert C.precompiled_header_key(cxx, flags + ["-DTL_SOMETHING=1"]) != os.path.basename(d)


@needs_gxx
def test_kernels_compiled_with_and_without_it_agree(tmp_path, monkeypatch):
    a = np.arange(64, dtype=np.float32)
    outs = []
    for pch in ("1", "0"):
        monkeypatch.setenv("TILELANG_CPU_PCH", pch)
        monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / f"cache{pch}"))
        k = tilelang.compile(_add_one(), target="cpu")
        b = np.zeros(64, dtype=np.float32)
        k(a, b)
        outs.append(b)
    np.testing.assert_array_equal(outs[0], a + 1)
    np.testing.assert_array_equal(outs[1], a + 1)


def test_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CPU_PCH", "0")
    monkeypatch.setenv("TILELANG_PCH_DIR", str(tmp_path))
    assert C.precompiled_header_dir(C.find_compiler(), C.flags()) is None
    assert os.listdir(tmp_path) == []


def test_select_between_two_inputs_under_a_bounds_check():
    # found by the fuzzer (Branch family, seed 71 #1211): GCC 12.2 at -O3 with AVX masked
    # stores left elements of Y unwritten (the generated C++ was right; the compiler's loop
    # if-conversion was not)
    @T.prim_func
    def main(X0: T.Tensor((16, 3), "float32"), X1: T.Tensor((16, 3), "float32"), Y: T.Tensor((16, 3), "float32")):
        with T.Kernel(T.ceildiv(3, 4), T.ceildiv(16, 8), threads=64) as (bx, by):
            for i, j in T.Parallel(8, 4):
                if by * 8 + i < 16 and bx * 4 + j < 3:
                    if X1[by * 8 + i, bx * 4 + j] < T.float32(1.0):
                        Y[by * 8 + i, bx * 4 + j] = X1[by * 8 + i, bx * 4 + j]
                    else:
                        Y[by * 8 + i, bx * 4 + j] = X0[by * 8 + i, bx * 4 + j]

    kern = tilelang.compile(main, target="cpu")
    rng = np.random.default_rng(0)
    for _ in range(5):
        x0, x1 = rng.standard_normal((16, 3), np.float32), rng.standard_normal((16, 3), np.float32)
        y = np.zeros((16, 3), np.float32)
        kern(x0, x1, y)
        np.testing.assert_array_equal(y, np.where(x1 < 1, x1, x0))
