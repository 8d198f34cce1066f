"""What a predicated load outside a tensor's bounds reads: 0, or the value that
`T.annotate_safe_value({A: v})` gives A in the enclosing scope. The annotation belongs to
the innermost enclosing block scope, as in the published package (a TVM block annotation):
a `T.sblock` (ir/stmt.py SBlock) or the kernel itself (`T.Kernel`, a KernelLaunch), and
holds for the whole scope; an inner scope's value for a tensor overrides an outer one's
inside it only. Passes that predicate loads track the scopes with `SafeValueScopes`."""
from __future__ import annotations

from contextlib import contextmanager

# key of the {Buffer: value} map in the annotations of an SBlock or a KernelLaunch
SAFE_VALUE_MAP = "safe_value_map"


def scope_safe_values(node) -> dict:
    """The {Buffer: value} that a block scope (SBlock, KernelLaunch) annotates; {} for others."""
    return (getattr(node, "annotations", None) or {}).get(SAFE_VALUE_MAP) or {}


class SafeValueScopes:
    """The safe values in effect at the node a pass is visiting: `with scopes.enter(node):`
    around the visit of each statement that may be a block scope."""

    def __init__(self):
        self.stack = [{}]   # id(buffer) -> value, innermost scope last

    @contextmanager
    def enter(self, node):
        values = scope_safe_values(node)
        if not values:
            yield
            return
        self.stack.append({**self.stack[-1], **{id(b): v for b, v in values.items()}})
        try:
            yield
        finally:
            self.stack.pop()

    def out_of_bounds_value(self, buf):
        """What a load of `buf` outside its bounds reads here, as a constant of its dtype."""
        from tilelang.ir.expr import literal
        return literal(self.stack[-1].get(id(buf), 0), buf.dtype)
