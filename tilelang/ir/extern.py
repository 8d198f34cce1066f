"""Device source text a kernel brings along (`T.import_source`): an `Evaluate` of the
`tl.import_source` call, kept in the body so that every pass carries it; backends
collect the texts and drop the statements."""
from __future__ import annotations

from tilelang.ir import stmt as S
from tilelang.ir.expr import Call, StringImm

IMPORT_SOURCE = "tl.import_source"


def import_source_stmt(text: str) -> S.Evaluate:
    return S.Evaluate(Call(IMPORT_SOURCE, [StringImm(text)], "handle"))


def is_import_source(stmt) -> bool:
    return isinstance(stmt, S.Evaluate) and isinstance(stmt.value, Call) and stmt.value.name == IMPORT_SOURCE


def imported_sources(body) -> list:
    """The distinct imported texts of a body, in first-use order."""
    from tilelang.ir.visitor import walk
    out = []

    def f(n):
        if is_import_source(n) and n.value.args[0].value not in out:
            out.append(n.value.args[0].value)
    walk(body, f)
    return out
