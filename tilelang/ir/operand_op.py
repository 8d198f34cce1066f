"""`OperandOp`: a tile op that describes itself, so that generic code needs no
per-op case: it lists its operand fields (walked and rebuilt by the visitor and
mutator), the buffers it reads and writes (barrier and dependence analyses), and
prints as `T.<op_name>(field=..., ..., setting=...)` (the printed form is also what
structural hashing sees)."""
from __future__ import annotations

from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.tile_ops import TileOp


class OperandOp(TileOp):
    fields: tuple = ()
    positional = False   # print operands positionally (the T function's own order)

    def children(self):
        return [getattr(self, f) for f in self.fields]

    def map_children(self, fn):
        """A copy with every operand replaced by fn(operand); self when none changed."""
        new = {f: fn(getattr(self, f)) for f in self.fields}
        if all(new[f] is getattr(self, f) for f in self.fields):
            return self
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.__dict__.update(new)
        return out

    def reads(self):
        """Buffers the op reads."""
        return []

    def writes(self):
        """Buffers the op writes."""
        return []

    def attrs(self):
        """Non-operand settings, printed (and so hashed) with the op."""
        return {}

    def print_with(self, p):
        """`T.<op_name>(field=..., ...)` in the printer `p`'s notation."""
        def fmt(v):
            if isinstance(v, BufferRegion):
                return p.region(v)
            if isinstance(v, Buffer):
                return p.buf(v)
            return p.expr(v)
        parts = [(fmt(getattr(self, f)) if self.positional else f"{f}={fmt(getattr(self, f))}")
                 for f in self.fields if getattr(self, f) is not None]
        parts += [f"{k}={v!r}" for k, v in self.attrs().items()]
        return f"T.{self.op_name}({', '.join(parts)})"
