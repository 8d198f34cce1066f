"""Hints and debugging: T.use_swizzle and T.annotate_layout (no effect on results),
T.print (stdout), T.device_assert (failing -> Python exception with the message)."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout


def _gemm(M, N, K, swizzle, annotate, panel=4, order="row"):
    bm = bn = 32
    bk = 32

    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            if annotate:
                T.annotate_layout({A_s: make_swizzled_layout(A_s), B_s: make_swizzled_layout(B_s)})
            if swizzle:
                T.use_swizzle(panel_size=panel, order=order)
            T.clear(C_f)
            for kk in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, kk * bk], A_s)
                T.copy(B[kk * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])
    return k


@pytest.mark.parametrize("swizzle,annotate,order", [(True, False, "row"), (True, False, "col"),
                                                    (False, True, "row"), (True, True, "row")])
def test_swizzle_and_layout_annotation_do_not_change_results(swizzle, annotate, order):
    M, N, K = 128, 96, 64
    kern = tilelang.compile(_gemm(M, N, K, swizzle, annotate, order=order), out_idx=[2], target="cpu")
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    torch.testing.assert_close(kern(a, b), a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_use_swizzle_positional_and_disabled():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(4, 4, threads=32) as (bx, by):
            T.use_swizzle(10)
            T.use_swizzle(8, enable=False)
            for i, j in T.Parallel(16, 16):
                C[by * 16 + i, bx * 16 + j] = A[by * 16 + i, bx * 16 + j] + 1
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(64, 64).astype(np.float32)
    np.testing.assert_array_equal(kern(a), a + 1)


def test_print_scalar_and_buffer(capfd):
    @T.prim_func
    def k(A: T.Tensor((4,), "float32"), C: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            F = T.alloc_fragment((4,), "float32")
            T.copy(A, F)
            T.print(A[2] * 2, msg="doubled")
            T.print(F, msg="tile")
            T.copy(F, C)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.array([1.5, -2.0, 3.25, 8.0], np.float32)
    capfd.readouterr()
    c = kern(a)
    np.testing.assert_array_equal(c, a)
    out = capfd.readouterr().out
    assert "doubled" in out and "6.5" in out, out
    assert "tile" in out and "-2" in out and "3.25" in out, out


def test_print_var_runtime_value(capfd):
    @T.prim_func
    def k(n: T.int32):
        with T.Kernel(1, threads=1) as bx:
            x = T.alloc_var("int32", init=n)
            x = x * 3 + 1
            T.print(x, msg="xval")
    kern = tilelang.compile(k, target="cpu")
    capfd.readouterr()
    kern(12345)
    out = capfd.readouterr().out
    assert "xval" in out and "37036" in out, out


def test_device_assert_fails_with_message():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), C: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(8):
                T.device_assert(A[i] >= 0, "inputs must be non-negative")
                C[i] = T.sqrt(A[i])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    ok = np.arange(8, dtype=np.float32)
    np.testing.assert_allclose(kern(ok), np.sqrt(ok), rtol=1e-6)  # passing: no exception
    bad = ok.copy()
    bad[5] = -1
    with pytest.raises(Exception, match="inputs must be non-negative"):
        kern(bad)
    # the kernel stays usable after a failed assertion
    np.testing.assert_allclose(kern(ok), np.sqrt(ok), rtol=1e-6)


def test_python_assert_runtime_condition():
    # a plain `assert` on a runtime value becomes a device assertion
    @T.prim_func
    def k(n: T.int32, C: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            assert n < 100, "n too large"
            C[0] = n
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    assert kern(7)[0] == 7
    with pytest.raises(Exception, match="n too large"):
        kern(500)


def test_device_assert_compile_time_false_is_error():
    with pytest.raises(tilelang.TileLangError, match="always false"):
        @T.prim_func
        def k(C: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=1) as bx:
                T.device_assert(False, "never")
                C[0] = 1
        tilelang.compile(k, out_idx=[0], target="cpu")


def test_get_kernel_source_and_hints_accepted():
    @T.prim_func
    def k(A: T.Tensor((32,), "float32"), C: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((32,), "float32")
            T.annotate_padding({S: 1}) if hasattr(T, "annotate_padding") else None
            T.copy(A, S)
            T.sync_threads()
            for i in T.Parallel(32):
                C[i] = S[31 - i]
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    src = kern.get_kernel_source()
    assert isinstance(src, str) and len(src) > 0
    a = np.random.randn(32).astype(np.float32)
    np.testing.assert_array_equal(kern(a), a[::-1])


def test_annotate_restrict_buffers_drops_restrict_and_is_hashed():
    import numpy as np
    import tilelang
    import tilelang.language as T
    from tilelang.ir.structural_hash import structural_hash

    def make(alias):
        @T.prim_func
        def k(X: T.Tensor((8,), "float32"), Y: T.Tensor((8,), "float32")):
            if alias:
                T.annotate_restrict_buffers(X, Y)
            with T.Kernel(1):
                for i in T.serial(8):
                    Y[i] = X[i] + 1
        return k
    a, b = make(True), make(False)
    assert "T.annotate_restrict_buffers(X, Y)" in a.script()
    assert structural_hash(a) != structural_hash(b)
    kern = tilelang.compile(a, target="cpu")
    assert "float* __restrict__ X" not in kern.get_kernel_source()
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    kern(x, y)
    np.testing.assert_array_equal(y, x + 1)
    try:
        src = tilelang.compile(a, target="cuda -arch=sm_90a").get_kernel_source()
    except ImportError:
        return
    assert "float* X" in src and "float* __restrict__ X" not in src
    src2 = tilelang.compile(b, target="cuda -arch=sm_90a").get_kernel_source()
    assert "float* __restrict__ X" in src2


def test_let_binds_a_placeholder_variable_for_the_rest_of_the_block():
    # `x = T.int32()` makes a scalar variable; `T.let(x, e)` binds it (the published alias test)
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=32) as bx:
            off = T.int32()
            T.let(off, bx * 32)
            for i in T.Parallel(32):
                B[off + i] = A[off + i] * 2.0
    text = k.script()
    assert "off = bx * 32" in text and "B[off + i] = A[off + i] * 2.0" in text, text
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(tilelang.compile(k, out_idx=[1], target="cpu")(a), a * 2)
    tilelang.compile(k, target="cuda -arch=sm_90a")


def test_dtype_call_without_value_is_a_fresh_variable():
    from tilelang.ir.expr import Var
    a, b = T.int32(), T.int32()
    assert isinstance(a, Var) and a is not b and a.dtype == "int32"
    assert (T.uint64() & T.uint64(0xFFFFFFFFFFFFFFFF)).dtype == "uint64"


def test_func_attr_is_kept_and_void_extern_calls_are_statements():
    from tilelang import tvm
    @T.prim_func
    def k(A: T.Tensor((4,), "float32")):
        T.func_attr({"tir.noalias": True})
        with T.Kernel(1, threads=1):
            tvm.tirx.call_extern("void", "tl_test_noop")
            A[0] = 1.0
    assert k.attrs["tir.noalias"] is True
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    calls = []
    walk(k.body, lambda n: calls.append(n.value) if isinstance(n, S.Evaluate) else None)
    assert [c.name for c in calls] == ["tl_test_noop"] and calls[0].dtype.name == "handle"
