"""`tilelang.testing`: pytest helpers used by kernel test files (skip markers for
devices and packages, seeding, `main`)."""
from __future__ import annotations

import importlib.util
import inspect
import random
import sys

import numpy as np

from tilelang.testing.perf import process_func, regression

__all__ = ["requires_cuda", "requires_package", "requires_llvm", "requires_rocm", "requires_metal",
           "requires_cdna", "requires_cuda_or_cdna", "requires_gfx950", "requires_cuda_compute_version",
           "main", "set_random_seed", "process_func", "regression", "torch_assert_close"] + \
    [f"requires_cuda_compute_version_{op}" for op in ("ge", "gt", "le", "lt", "eq")]


def _pytest():
    import pytest
    return pytest


def cuda_compute_version():
    """(major, minor) of the first visible NVIDIA GPU, (0, 0) when there is none."""
    try:
        import torch
        if torch.cuda.is_available():
            return tuple(torch.cuda.get_device_capability(0))
    except ImportError:
        pass
    try:
        from tilelang.backend.registry import get_backend
        b = get_backend("cuda")
        if b.device_available():
            arch = b.parse_target("cuda", None, {}).arch  # e.g. sm_90a
            digits = "".join(ch for ch in arch if ch.isdigit())
            return int(digits[:-1]), int(digits[-1])
    except Exception:  # noqa: BLE001 - no usable GPU
        pass
    return (0, 0)


def _has_cuda():
    return cuda_compute_version() != (0, 0)


def _mark(cond_skip, reason):
    pytest = _pytest()
    return pytest.mark.skipif(cond_skip, reason=reason)


def requires_cuda(func=None):
    mark = _mark(not _has_cuda(), "requires an NVIDIA GPU")
    if func is None:
        return mark
    return mark(func)


requires_cuda.marks = lambda: [_mark(not _has_cuda(), "requires an NVIDIA GPU")]


def requires_package(*names):
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    return _mark(bool(missing), f"requires package(s) {', '.join(missing)}")


def _never(reason):
    def deco(func=None):
        mark = _mark(True, reason)
        return mark if func is None else mark(func)
    return deco


requires_llvm = _never("the LLVM backend is not part of this implementation")
requires_rocm = _never("ROCm is not supported yet")
requires_metal = _never("Metal is not supported yet")
requires_cdna = requires_rocm
requires_gfx950 = requires_rocm
requires_cuda_or_cdna = requires_cuda


def requires_cuda_compute_version(major_version, minor_version=0, mode="ge"):
    have = cuda_compute_version()
    want = (major_version, minor_version)
    ok = {"ge": have >= want, "gt": have > want, "le": have <= want, "lt": have < want,
          "eq": have == want}[mode]
    skip = (not ok) or have == (0, 0)
    reason = f"requires CUDA compute {mode} {want[0]}.{want[1]}, have {have[0]}.{have[1]}"

    def inner(func):
        return _mark(skip, reason)(func)
    return inner


def requires_cuda_compute_version_ge(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "ge")


def requires_cuda_compute_version_gt(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "gt")


def requires_cuda_compute_version_eq(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "eq")


def requires_cuda_compute_version_lt(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "lt")


def requires_cuda_compute_version_le(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "le")


def main():
    """Run the calling test file with pytest (`if __name__ == "__main__": tilelang.testing.main()`)."""
    test_file = inspect.getsourcefile(sys._getframe(1))
    sys.exit(_pytest().main([test_file] + sys.argv[1:]))


def set_random_seed(seed: int = 42) -> None:
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
    except ImportError:
        pass


def torch_assert_close(a, b, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.001, verbose=False, **kwargs):
    from tilelang.profiler import assert_close
    assert_close(a, b, atol=atol, rtol=rtol, max_mismatched_ratio=max_mismatched_ratio)
