"""Build helpers for the CUDA backend tests."""
import collections
import re

from tilelang.backend.registry import get_backend, parse_target
from tilelang.backend.cuda.compiler import sass


def build(func, arch="sm_90a", config=None):
    return get_backend("cuda").build(func, parse_target({"kind": "cuda", "arch": arch}), dict(config or {}) or None)


def sass_ops(artifact):
    """Opcode -> count in the cubin's SASS."""
    text = sass(artifact.binary)
    return collections.Counter(re.findall(r"\b([A-Z][A-Z0-9]+)(?:\.[A-Za-z0-9_.]+)*\s", text))
