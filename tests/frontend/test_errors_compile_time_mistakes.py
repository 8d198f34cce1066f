"""Plausible mistakes in a kernel: each is an error at the user's own line with a hint
(issue 14), never a silent truncation, an internal traceback or a C++ compiler error."""
import inspect

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import OutOfScopeError, TileLangError


def _line_of(err):
    first = str(err).splitlines()[0]
    assert first.startswith(__file__ + ":"), first
    assert "^" in str(err)
    return int(first.split(":")[1])


def _line(marker):
    """The line of this file that contains `marker` (a comment on the faulty line)."""
    src = open(__file__).read().splitlines()
    return next(i + 1 for i, text in enumerate(src) if text.rstrip().endswith("# " + marker))


def test_parallel_with_start_prints_and_compiles():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel((8, 16)):
                A[i] = 1.0
    assert "T.Parallel((8, 16))" in k.script()
    a = np.zeros(64, "float32")
    tilelang.compile(k, target="cpu")(a)
    assert (a[8:16] == 1).all() and a[:8].sum() == 0 and a[16:].sum() == 0


def test_float_index():
    with pytest.raises(TypeError, match="indexed with the float") as e:
        @T.prim_func
        def k(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(8):
                    A[i * 1.5] = 1.0  # float-index
    assert _line_of(e.value) == _line("float-index")
    assert "//" in str(e.value)


def test_float_grid():
    N = 64
    with pytest.raises(TypeError, match="grid extent must be an integer") as e:
        @T.prim_func
        def k(A: T.Tensor((64,), "float32")):
            with T.Kernel(N / 16, threads=32) as bx:  # float-grid
                for i in T.Parallel(16):
                    A[bx * 16 + i] = 1.0
    assert _line_of(e.value) == _line("float-grid")


def test_float_parallel_extent():
    with pytest.raises(TypeError, match="loop extent must be an integer") as e:
        @T.prim_func
        def k(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(64 / 3):  # float-extent
                    A[i] = 1.0
    assert _line_of(e.value) == _line("float-extent")


def test_negative_num_stages():
    with pytest.raises(ValueError, match="num_stages") as e:
        @T.prim_func
        def k(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=32):
                for ko in T.Pipelined(4, num_stages=-1):  # neg-stages
                    A[ko] = 1.0
    assert _line_of(e.value) == _line("neg-stages")


def test_loop_var_used_after_its_loop():
    with pytest.raises(OutOfScopeError, match="loop variable `i` is used outside its loop") as e:
        @T.prim_func
        def k(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(8):
                    A[i] = 1.0
                A[i] = 2.0  # after-loop
    assert _line_of(e.value) == _line("after-loop")


def test_loop_var_inside_nested_loops_is_fine():
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(8):
                for j in T.Parallel(8):
                    A[i, j] = T.cast(i + j, "float32")
    a = np.zeros((8, 8), "float32")
    tilelang.compile(k, target="cpu")(a)
    assert (a == np.add.outer(np.arange(8), np.arange(8))).all()


def test_tile_op_before_kernel_on_cuda():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32")):
        T.fill(A, 1.0)  # before-kernel
        with T.Kernel(1, threads=32):
            A[0] = 2.0
    with pytest.raises(NotImplementedError, match="inside `with T.Kernel") as e:
        tilelang.lower(k, target="cuda")
    assert _line_of(e.value) == _line("before-kernel")


def test_runtime_shaped_shared_memory_on_cuda():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((n,), "float32")  # runtime-shape
            S[0] = 1.0
            A[0] = S[0]
    with pytest.raises(NotImplementedError, match="needs a constant shape") as e:
        tilelang.lower(k, target="cuda")
    assert _line_of(e.value) == _line("runtime-shape")


def test_misspelled_dtype_suggests_the_right_one():
    with pytest.raises(ValueError, match="unknown dtype 'flaot32'") as e:
        @T.prim_func
        def k(A: T.Tensor((64,), "flaot32")):  # bad-dtype
            with T.Kernel(1, threads=32):
                A[0] = 1.0
    assert isinstance(e.value, TileLangError)
    assert str(e.value).splitlines()[0].startswith(f"{__file__}:{_line('bad-dtype')}:")
    assert "did you mean 'float32'" in str(e.value)


def test_jit_factory_without_return():
    @tilelang.jit
    def factory(n):  # no-return
        @T.prim_func
        def k(A: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32):
                A[0] = 1.0
    with pytest.raises(TypeError, match="must return a @T.prim_func, returned NoneType") as e:
        factory(8)
    first = str(e.value).splitlines()[0]
    assert first.startswith(f"{__file__}:{inspect.getsourcelines(test_jit_factory_without_return)[1] + 1}:")
    assert "no `return`" in str(e.value)
