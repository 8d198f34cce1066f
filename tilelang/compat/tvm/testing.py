"""`tvm.testing` as user kernels' test files use it (`@tvm.testing.requires_package("bitblas")`,
`tvm.testing.main()`): the same skip marks as `tilelang.testing`."""
from __future__ import annotations

from tilelang.testing import requires_package, requires_cuda, main   # noqa: F401

__all__ = ["requires_package", "requires_cuda", "main"]
