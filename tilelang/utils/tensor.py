"""`tilelang.utils.tensor`: tensor comparison and input-supply helpers used by kernel tests."""
from tilelang.testing import torch_assert_close  # noqa: F401
from tilelang.profiler.supply import TensorSupplyType, get_tensor_supply  # noqa: F401
