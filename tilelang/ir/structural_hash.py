"""Structural hash of a PrimFunc: equal for kernels that differ only in object
identity (the printed form names variables canonically by first use)."""
from __future__ import annotations

import hashlib

from tilelang.ir.printer import Printer


def structural_hash(func) -> str:
    text = Printer().func(func)
    return hashlib.sha256(text.encode()).hexdigest()
