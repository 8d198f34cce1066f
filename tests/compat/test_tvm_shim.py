"""`from tilelang import tvm`, `import tvm`, `from tvm import DataType, tirx`: TVM's names
as aliases of our IR, so kernels written with TVM expression helpers run unmodified."""
import sys
import types

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E


def test_tilelang_tvm_is_the_shim_and_import_tvm_finds_it():
    import tvm
    from tvm import DataType, tirx
    assert tilelang.tvm is tvm
    assert tvm.tir is tirx and sys.modules["tvm.tirx"] is tirx and sys.modules["tvm.tir"] is tirx
    assert DataType is T.dtype
    assert DataType("float16").bits == 16 and DataType(T.int8).bits == 8
    assert tirx.PrimExpr is E.PrimExpr


def test_a_real_tvm_is_never_shadowed(monkeypatch):
    from tilelang.compat import install_tvm_alias
    fake = types.ModuleType("tvm")
    monkeypatch.setitem(sys.modules, "tvm", fake)
    assert install_tvm_alias() is False
    assert sys.modules["tvm"] is fake


def test_tirx_constructors_build_our_expressions():
    from tvm import tirx
    c = tirx.const(14, T.uint16)
    assert isinstance(c, E.IntImm) and c.dtype == T.uint16 and c.value == 14
    assert tirx.const(1.5, "float16").dtype == T.float16
    assert tirx.const(3).dtype == T.int32
    x = E.Var("x", T.uint16)
    r = tirx.reinterpret(T.float16, x)  # TVM order: dtype first
    assert isinstance(r, E.Call) and r.name == "reinterpret" and r.dtype == T.float16
    assert tirx.Cast(T.int32, x).dtype == T.int32
    assert tirx.Select(x == 0, tirx.const(0, T.uint16), x).dtype == T.uint16
    assert tirx.Min(x, tirx.const(255, T.uint16)).op == "min"
    assert (x.astype(T.uint32) * tirx.const(4, T.uint32)).dtype == T.uint32


def _fp4_to_f16(nbit, val, pos):
    """An e2m1 nibble of a uint8 as float16 bits, written with tvm.tirx only."""
    from tvm import tirx
    f4 = (val >> (pos.astype(T.uint16) * tirx.const(nbit, T.uint16))) & tirx.const(15, T.uint16)
    s = f4 >> tirx.const(3, T.uint16)
    e = ((f4 & tirx.const(6, T.uint16)) >> tirx.const(1, T.uint16)) + tirx.const(14, T.uint16)
    m = f4 & tirx.const(1, T.uint16)
    bits = ((e | (s << tirx.const(5, T.uint16))) << tirx.const(10, T.uint16)) | (m << tirx.const(9, T.uint16))
    return tirx.reinterpret(T.float16, bits.astype(T.uint16))


def _i4_to_i8(val, pos):
    """A signed int4 nibble of a uint8, sign-extended through an int8 bit cast."""
    from tvm import tirx
    i4 = (val >> (pos.astype(T.uint8) * tirx.const(4, T.uint8))) & tirx.const(15, T.uint8)
    return tirx.reinterpret(T.int8, i4 << tirx.const(4, T.uint8)) >> tirx.const(4, T.int8)


def test_tirx_helpers_in_a_kernel_decode_packed_nibbles_on_the_cpu():
    N, K = 16, 32

    @T.prim_func
    def decode(B: T.Tensor((N, K // 2), T.uint8), F: T.Tensor((N, K), T.float16), I: T.Tensor((N, K), T.int8)):
        with T.Kernel(1, threads=128):
            for i, j in T.Parallel(N, K):
                F[i, j] = _fp4_to_f16(4, B[i, j // 2], j % 2)
                I[i, j] = _i4_to_i8(B[i, j // 2], j % 2)

    k = tilelang.compile(decode, target="cpu")
    b = np.random.randint(0, 256, (N, K // 2)).astype(np.uint8)
    f = np.zeros((N, K), np.float16)
    i8 = np.zeros((N, K), np.int8)
    k(b, f, i8)
    nib = np.stack([b & 15, b >> 4], axis=-1).reshape(N, K).astype(np.int32)
    sign = np.where(nib >> 3, -1.0, 1.0)
    exp = (nib & 6) >> 1
    ref = sign * 2.0 ** (exp - 1) * (1 + 0.5 * (nib & 1))  # the formula above: no subnormals
    np.testing.assert_array_equal(f.astype(np.float64), ref)
    np.testing.assert_array_equal(i8, np.where(nib >= 8, nib - 16, nib))


def test_tirx_bit_casts_compile_for_cuda():
    pytest.importorskip("cuda.bindings")
    N, K = 16, 32

    @T.prim_func
    def decode(B: T.Tensor((N, K // 2), T.uint8), I: T.Tensor((N, K), T.int8)):
        with T.Kernel(1, threads=128):
            for i, j in T.Parallel(N, K):
                I[i, j] = _i4_to_i8(B[i, j // 2], j % 2)

    src = tilelang.compile(decode, target="cuda -arch=sm_90a").get_kernel_source()
    # the source width is spelled out (C computes narrow ints in int) and the shift wraps to 8 bits
    assert "tl::bitcast<signed char, unsigned char>(((unsigned char)(" in src


def test_narrow_integer_shifts_wrap_to_their_dtype():
    """TVM-style bit manipulation relies on uint8/uint16 arithmetic staying in its width
    (C would compute it in int)."""
    from tvm import tirx

    @T.prim_func
    def f(A: T.Tensor((16,), T.uint8), O: T.Tensor((16,), T.uint16)):
        with T.Kernel(1):
            for i in T.serial(16):
                O[i] = (A[i] << tirx.const(4, T.uint8)).astype(T.uint16)

    a = np.arange(16, dtype=np.uint8) * 17
    o = np.zeros(16, np.uint16)
    tilelang.compile(f, target="cpu")(a, o)
    np.testing.assert_array_equal(o, (a.astype(np.uint16) << 4) & 0xFF)
    pytest.importorskip("cuda.bindings")
    src = tilelang.compile(f, target="cuda -arch=sm_90a").get_kernel_source()
    assert "((unsigned char)(A[i] << ((unsigned char)4)))" in src


def test_published_dtype_spellings():
    import torch
    assert T.uint == T.uint32 and T.int == T.int32 and T.dtype("uint") is T.uint32
    assert getattr(torch, T.float16) is torch.float16   # dtypes are names
    assert "".join(c for c in T.int8 if not c.isdigit()) == "int"


def test_immediates_take_tvms_argument_order():
    from tvm import tirx
    f = tirx.FloatImm("float32", 0.5)
    i = tirx.IntImm("int8", 3)
    assert isinstance(f, E.FloatImm) and f.value == 0.5 and f.dtype == "float32"
    assert isinstance(i, E.IntImm) and i.value == 3 and i.dtype == "int8"
    assert isinstance(f, tirx.FloatImm) and not isinstance(i, tirx.FloatImm)
    assert isinstance(T.__exp(tirx.Var("v", "float16")), tirx.Call)


def test_target_context_is_what_auto_means():
    import tvm
    from tilelang.backend.registry import parse_target
    with tvm.target.Target({"kind": "cuda", "arch": "sm_80"}) as t:
        assert t.kind.name == "cuda" and t.arch == "sm_80"
        assert parse_target("auto").arch == "sm_80"
    assert parse_target(tvm.target.Target("cpu")).kind == "cpu"


def test_pass_context_configs_reach_compiles_inside_it():
    import tvm
    from tilelang.transform.pass_manager import current_pass_configs
    with tvm.transform.PassContext(config={tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True}):
        assert current_pass_configs() == {"tl.disable_tma_lower": True}
    assert current_pass_configs() == {}


def test_tvm_errors_are_our_located_errors():
    import tvm
    assert tvm.TVMError is tilelang.TileLangError and tvm.error.InternalError is tilelang.TileLangError


def test_located_errors_keep_the_python_exception_kind():
    # the published package raises TypeError / ValueError / AssertionError in these places;
    # ours are source-located TileLangErrors that are also instances of those classes
    with pytest.raises(TypeError) as ei:
        @T.prim_func
        def k(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.reduce_sum(A, A, dim=0, no_such_argument=1)
    assert isinstance(ei.value, tilelang.TileLangError) and "test_tvm_shim.py" in str(ei.value)
    with pytest.raises(AssertionError):   # a view over other bytes
        @T.prim_func
        def v(A: T.Tensor((16,), "float32"), B: T.Tensor((4, 5), "float32")):
            with T.Kernel(1):
                T.copy(T.view(A, (4, 5)), B)


def test_tvm_testing_marks_skip_as_tilelang_testing_does():
    """`@tvm.testing.requires_package("bitblas")` (published dequantize_gemm/example_dequant_gemm_fine_grained.py)."""
    import pytest
    from tilelang import tvm
    mark = tvm.testing.requires_package("surely_not_a_package_xyz")
    assert isinstance(mark, pytest.MarkDecorator) and mark.args[0] is True
    assert tvm.testing.requires_package("numpy").args[0] is False
