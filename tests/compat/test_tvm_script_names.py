"""Names published tests and kernels import from TVM's script namespace and dtype module:
the frame base class, `tvm.tirx.expr`, `_all_dtypes`, `tilelang.rocm.target`."""
import pytest

import tilelang
import tilelang.language as T


def test_frames_are_ir_builder_frames():
    from tvm.script.ir_builder.base import IRBuilderFrame
    assert isinstance(T.serial(1, 10, 1), IRBuilderFrame)
    assert isinstance(T.Parallel(4), IRBuilderFrame)
    assert not isinstance(T.int32, IRBuilderFrame)


def test_tirx_expr_classes_build_our_ir():
    from tvm.tirx.expr import IntImm, Var, Not, Or
    from tvm import tirx
    from tilelang.ir import expr as E
    v = Var("v", T.int32)
    e = Or(Not(tirx.all(v < 3, v > 0)), v == 7)
    assert isinstance(e, E.PrimExpr) and e.dtype.name == "bool"
    assert isinstance(IntImm(T.int32, 3), E.IntImm)


@pytest.mark.parametrize("name", __import__("tilelang.language.dtypes", fromlist=["_all_dtypes"])._all_dtypes)
def test_every_listed_dtype_name_resolves(name):
    dt = getattr(T, name)
    assert isinstance(dt, tilelang.tvm.DataType)


def test_hip_availability_is_false_without_rocm():
    from tilelang.rocm.target import check_hip_availability
    import torch
    if getattr(torch.version, "hip", None):
        pytest.skip("a ROCm build of torch")
    assert check_hip_availability() is False


def test_torch_storage_dtypes():
    import torch
    from tilelang.language.dtypes import resolve_torch_storage_dtype
    assert resolve_torch_storage_dtype(T.float16) == T.float16
    assert resolve_torch_storage_dtype(T.int4) == T.int8
    if hasattr(torch, "float4_e2m1fn_x2"):
        assert T.float4_e2m1fn.as_torch() is torch.float4_e2m1fn_x2
        assert resolve_torch_storage_dtype(T.float4_e2m1fn) == T.float4_e2m1fnx2
