"""`with T.sblock(name):` (TVM's block, `T.block` in older TVM script): a named scope of
statements. What is annotated in it (`T.annotate_safe_value`) applies to the whole block
and to no statement outside it; `T.reads(...)` / `T.writes(...)` inside it declare the
regions it accesses (recorded and printed; nothing relies on them)."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer, BufferRegion, to_region
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import BufferLoad


class SBlockFrame(B.Frame):
    def __init__(self, name_hint: str = "", no_realize: bool = False):
        if not isinstance(name_hint, str):
            raise TileLangError(f"T.sblock: the name must be a str, got {name_hint!r}")
        self.name = name_hint
        self.reads, self.writes = [], []
        self.annotations = {}   # e.g. the safe values of T.annotate_safe_value (ir/safe_values.py)

    def __enter__(self):
        b = B.require("T.sblock")
        b.push()
        b.block_scopes.append(self)
        return None

    def __exit__(self, et, ev, tb):
        b = B.current()
        b.block_scopes.pop()
        body = b.pop()
        if et is None:
            b.emit(S.SBlock(self.name, body, self.reads, self.writes, self.annotations))
        return False


sblock = SBlockFrame
block = SBlockFrame   # the name in older TVM script


def _regions(fn, regions):
    out = []
    for r in regions:
        if isinstance(r, (list, tuple)):   # T.reads([A[0:4], B]) as TVM script allows
            out += _regions(fn, r)
        elif isinstance(r, (Buffer, BufferRegion, BufferLoad)):
            out.append(to_region(r))
        else:
            raise TileLangError(f"T.{fn} takes buffers or buffer regions (e.g. A[0:64, k]), got {r!r}")
    return out


def _innermost_sblock(fn):
    b = B.require(f"T.{fn}")
    frames = [f for f in b.block_scopes if isinstance(f, SBlockFrame)]
    if not frames or b.block_scopes[-1] is not frames[-1]:
        raise TileLangError(f"T.{fn} can only be used directly inside `with T.sblock(...)`")
    return frames[-1]


def reads(*regions):
    """The regions the enclosing `T.sblock` reads."""
    _innermost_sblock("reads").reads.extend(_regions("reads", regions))


def writes(*regions):
    """The regions the enclosing `T.sblock` writes."""
    _innermost_sblock("writes").writes.extend(_regions("writes", regions))
