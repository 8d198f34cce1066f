"""`tilelang.utils.tensor`: tensor comparison helpers used by kernel tests."""
from tilelang.testing import torch_assert_close  # noqa: F401
from tilelang.profiler.supply import TensorSupplyType  # noqa: F401
