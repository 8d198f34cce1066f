"""`tvm.script.ir_builder.base.IRBuilderFrame`: the class of the scopes a kernel body
enters (our `Frame`: T.Kernel, T.serial, T.Parallel, ...), for `isinstance` checks."""
from __future__ import annotations

import types

from tilelang.ir.builder import Frame as IRBuilderFrame

ir_builder = types.ModuleType("tvm.script.ir_builder")
base = types.ModuleType("tvm.script.ir_builder.base")
base.IRBuilderFrame = IRBuilderFrame
ir_builder.base = base

__all__ = ["ir_builder", "IRBuilderFrame"]
