"""`tilelang.utils.tensor.get_tensor_supply`: one tensor per kernel parameter."""
import pytest

import tilelang.language as T
from tilelang.utils.tensor import TensorSupplyType, get_tensor_supply

torch = pytest.importorskip("torch")


@T.prim_func
def two_params(A: T.Tensor((4, 8), "float16"), B: T.Tensor((T.dynamic("n"),), "int32")):
    with T.Kernel(1):
        pass


def test_supply_matches_parameter_shape_and_dtype():
    supply = get_tensor_supply(TensorSupplyType.Auto, device="cpu")
    a = supply(two_params.params[0])
    assert tuple(a.shape) == (4, 8) and a.dtype == torch.float16
    assert float(a.abs().max()) <= 1.0


def test_integer_supply_is_integral():
    a = get_tensor_supply(TensorSupplyType.Integer, device="cpu")(two_params.params[0])
    assert torch.equal(a, a.round())


def test_dynamic_shape_is_rejected_with_the_parameter_name():
    with pytest.raises(ValueError, match="`B` has the dynamic shape"):
        get_tensor_supply(device="cpu")(two_params.params[1])
