"""Shared by the HIP backend tests: whether hipcc is here, HIP source of a PrimFunc."""
import pytest

from tilelang.backend.hip.compiler import find_hipcc
from tilelang.backend.registry import get_backend, parse_target
from tilelang.transform.pass_manager import PassContext

needs_hipcc = pytest.mark.skipif(find_hipcc() is None, reason="hipcc not installed (apt-get install hipcc)")


def hip_source(func, arch="gfx90a"):
    """(lowered PrimFunc, HIP source, meta) without compiling."""
    return get_backend("hip").generate(func, parse_target(f"hip -arch={arch}"), PassContext())
