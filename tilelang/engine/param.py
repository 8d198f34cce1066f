"""`tilelang.engine.param.KernelParam`: the dtype and shape of one kernel parameter, as the
published package describes a compiled kernel's parameters to host code (profilers, tensor
suppliers, the published puzzles' checkers)."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir.dtypes import DataType, as_dtype
from tilelang.ir.expr import PrimExpr, const_int_value


@dataclass
class KernelParam:
    dtype: DataType      # compares equal to its name ("float16")
    shape: list          # ints, or expressions for dynamic dimensions; [] for a scalar

    @classmethod
    def from_buffer(cls, buffer) -> KernelParam:
        shape = []
        for d in buffer.shape:
            v = const_int_value(d) if isinstance(d, PrimExpr) else d
            v = d if v is None else v
            if not isinstance(v, (int, PrimExpr)):
                raise ValueError(f"KernelParam.from_buffer: unsupported dimension {d!r} of {buffer.name}")
            shape.append(v)
        return cls(as_dtype(buffer.dtype), shape)

    @classmethod
    def from_var(cls, var) -> KernelParam:
        return cls(as_dtype(var.dtype), [])

    def _name(self) -> str:
        s = str(self.dtype)
        return s[len("torch."):] if s.startswith("torch.") else s

    def is_scalar(self) -> bool:
        return len(self.shape) == 0

    def is_unsigned(self) -> bool:
        return self._name().startswith("uint")

    def is_float8(self) -> bool:
        return self._name().startswith("float8")

    def is_float4(self) -> bool:
        return self._name().startswith("float4")

    def is_boolean(self) -> bool:
        return self._name().startswith("bool")

    def torch_dtype(self):
        return as_dtype(self.dtype).as_torch()

    def tilelang_dtype(self) -> DataType:
        return as_dtype(self.dtype)
