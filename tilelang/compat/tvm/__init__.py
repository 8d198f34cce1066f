"""The TVM names user kernels import (`from tilelang import tvm`, `from tvm import
DataType, tirx`), each an alias of our IR: `DataType` is our dtype and `tirx`
builds our expressions. Only names real user code uses are here."""
from __future__ import annotations

from tilelang.ir.dtypes import DataType
from tilelang.compat.tvm import tirx, target, transform, error, script, testing
from tilelang.compat.tvm.error import TVMError

tir = tirx

__all__ = ["DataType", "tirx", "tir", "target", "transform", "error", "script", "testing", "TVMError"]
