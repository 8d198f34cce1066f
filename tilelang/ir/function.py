"""`PrimFunc`: a kernel function (parameters, body, attributes)."""
from __future__ import annotations

from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import Var, PrimExpr


class PrimFunc:
    def __init__(self, name, params, body, attrs=None, span=None, source=None):
        self.name = name
        self.params = list(params)   # Buffer (global tensors) or Var (scalars)
        self.body = body
        self.attrs = dict(attrs or {})
        self.span = span
        self.source = source  # (filename, source text, first line) of the user's kernel

    @property
    def buffer_params(self):
        return [p for p in self.params if isinstance(p, Buffer)]

    def dynamic_vars(self):
        """Shape/stride variables that the arguments' shapes bind, in first-seen order."""
        from tilelang.ir.visitor import collect_vars
        seen, out = set(), []
        scalar = {id(p) for p in self.params if isinstance(p, Var)}
        for p in self.params:
            if isinstance(p, Buffer):
                for d in list(p.shape) + list(p.strides or ()):
                    if isinstance(d, PrimExpr):
                        for v in collect_vars(d):
                            if id(v) not in seen and id(v) not in scalar:
                                seen.add(id(v))
                                out.append(v)
        return out

    @property
    def buffer_map(self):
        """TVM's `func.buffer_map`: each tensor parameter maps to its buffer (here the
        parameter is the buffer)."""
        from tilelang.ir.buffer import Buffer
        return {p: p for p in self.params if isinstance(p, Buffer)}

    def with_body(self, body):
        f = PrimFunc(self.name, self.params, body, self.attrs, self.span, self.source)
        return f

    def script(self):
        from tilelang.ir.printer import func_str
        return func_str(self)

    def __repr__(self):
        return self.script()

    __str__ = __repr__
