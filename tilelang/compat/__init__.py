"""Compatibility with code written against the published TileLang's TVM-based API.

`tvm/` is a small module named like TVM whose objects are our own IR types, so that
user code such as `from tvm import DataType, tirx` runs without TVM installed."""
from __future__ import annotations

import importlib.util
import sys

from tilelang.compat import tvm

_MODULES = {"tvm": tvm, "tvm.tirx": tvm.tirx, "tvm.tir": tvm.tirx, "tvm.target": tvm.target,
            "tvm.transform": tvm.transform, "tvm.error": tvm.error, "tvm.tirx.expr": tvm.tirx.expr,
            "tvm.tir.expr": tvm.tirx.expr, "tvm.script": tvm.script, "tvm.script.ir_builder": tvm.script.ir_builder,
            "tvm.script.ir_builder.base": tvm.script.base}


def install_tvm_alias() -> bool:
    """Make `import tvm` (and `tvm.tirx` / `tvm.tir`) resolve to our shim when no real
    TVM is installed. A real TVM is never shadowed. Returns whether the alias is in place."""
    if sys.modules.get("tvm") is tvm:
        return True
    if "tvm" in sys.modules or importlib.util.find_spec("tvm") is not None:
        return False
    for name, mod in _MODULES.items():
        sys.modules.setdefault(name, mod)
    return True
