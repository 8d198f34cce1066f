"""TVMScript-level names of the published `T` namespace: `T.allocate`, `T.inline`,
`T.get_let_value`, `T.has_let_value`."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer
from tilelang.ir.dtypes import as_dtype
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import PrimExpr, Var

_SCOPES = {"global": "global", "shared": "shared", "shared.dyn": "shared", "local": "local",
           "local.fragment": "local.fragment", "local.var": "local.var"}


class _Allocation:
    """`with T.allocate([n], dtype, scope) as buf:`, the TVMScript form."""

    def __init__(self, buf):
        self.buffer = buf

    def __enter__(self):
        return self.buffer

    def __exit__(self, *exc):
        return False


def allocate(extents, dtype, scope="global", condition=None, annotations=None):
    """A buffer of `extents` in `scope`, alive to the end of the kernel (global: of the
    function call)."""
    b = B.require("T.allocate")
    if scope not in _SCOPES:
        raise TileLangError(f"T.allocate: unknown scope {scope!r}", hint=f"use one of {sorted(_SCOPES)}")
    if scope == "global" and b.kernel_depth:
        raise TileLangError("T.allocate(..., 'global') must be called outside `with T.Kernel(...)`")
    extents = (extents,) if isinstance(extents, (int, PrimExpr)) else tuple(extents)
    names = B.source_names("with")
    buf = Buffer(names[0] if names else "buf", extents, as_dtype(dtype), _SCOPES[scope])
    b.emit(S.DeclBuffer(buf))
    return _Allocation(buf)


def has_let_value(var) -> bool:
    """Whether `var` names a computed value. A kernel body's `x = expr` binds the name
    to the expression itself here, so only variables proper (parameters, loop and
    thread indices) have none."""
    return isinstance(var, PrimExpr) and not isinstance(var, Var)


def get_let_value(var):
    """The value `var` was bound to (see `has_let_value`), else None."""
    return var if has_let_value(var) else None
