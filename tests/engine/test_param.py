"""`tilelang.engine.param.KernelParam`: a compiled kernel's parameter as the published package
describes it (the published puzzles' checker imports it and reads `.shape` / `.dtype`)."""
import pytest

from tilelang.engine.param import KernelParam
from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import Var


def test_from_buffer_static_and_dynamic_dims():
    n = Var("n", "int32")
    p = KernelParam.from_buffer(Buffer("A", (4, n), "float16"))
    assert p.shape[0] == 4 and p.shape[1] is n
    assert p.dtype == "float16" and not p.is_scalar() and not p.is_unsigned()
    torch = pytest.importorskip("torch")
    assert p.torch_dtype() is torch.float16


def test_from_var_is_a_scalar_and_kind_predicates():
    p = KernelParam.from_var(Var("x", "uint8"))
    assert p.is_scalar() and p.is_unsigned() and p.shape == []
    assert KernelParam.from_buffer(Buffer("B", (2,), "float8_e4m3")).is_float8()
    assert KernelParam.from_buffer(Buffer("C", (2,), "bool")).is_boolean()
