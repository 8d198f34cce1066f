"""Structural hash of a PrimFunc: equal for kernels that differ only in object
identity (the printed form names variables canonically by first use)."""
from __future__ import annotations

import hashlib

from tilelang.ir.printer import Printer, Namer


class _CanonicalNamer(Namer):
    """Names by order of first use, ignoring the user's names."""

    def __call__(self, obj, base):
        return super().__call__(obj, "v")


def structural_hash(func) -> str:
    text = Printer(_CanonicalNamer()).func(func)
    return hashlib.sha256(text.encode()).hexdigest()
