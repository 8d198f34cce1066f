"""`tvm.target.Target`: a target spec (string, dict or Target) as an object. Used as a
context manager it is the target that `target="auto"` means inside the block."""
from __future__ import annotations

from types import SimpleNamespace

from tilelang.backend import registry


class Target:
    def __init__(self, target, host=None):
        if isinstance(target, Target):
            target = target.spec
        self.spec = target
        self.host = host
        d = dict(target) if isinstance(target, dict) else None
        kind = d.get("kind") if d is not None else str(target).split()[0]
        self.kind = SimpleNamespace(name=kind)
        self.arch = d.get("arch") if d is not None else _option(str(target), "arch")
        self.attrs = dict(d or {})
        self.keys = [kind]

    def resolved(self) -> registry.Target:
        """Our registry's Target for this spec (unknown kinds raise a clear ValueError)."""
        return registry.parse_target(self.spec)

    def __enter__(self):
        registry.push_target(self.resolved() if self.kind.name in registry.known_kinds() else self.spec)
        return self

    def __exit__(self, *exc):
        registry.pop_target()
        return False

    def __str__(self):
        if isinstance(self.spec, dict):
            return self.kind.name + (f" -arch={self.arch}" if self.arch else "")
        return str(self.spec)

    __repr__ = __str__

    @staticmethod
    def current(allow_none=True):
        return registry.current_target()


def _option(spec, key):
    for part in spec.split()[1:]:
        if part.startswith(f"-{key}="):
            return part.split("=", 1)[1]
    return None
