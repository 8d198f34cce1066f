"""`tvm.error` / `tvm.TVMError`: the exceptions code written for the published package
catches when a kernel is rejected. Ours are TileLangError (source-located), so these
names are that class."""
from tilelang.ir.errors import TileLangError

TVMError = TileLangError
InternalError = TileLangError
DiagnosticError = TileLangError

__all__ = ["TVMError", "InternalError", "DiagnosticError"]
