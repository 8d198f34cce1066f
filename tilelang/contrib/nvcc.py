"""`tilelang.contrib.nvcc`: the compute version of the visible GPU."""
from __future__ import annotations


def get_target_compute_version(target=None) -> str:
    from tilelang.testing import cuda_compute_version
    major, minor = cuda_compute_version()
    if (major, minor) == (0, 0):
        raise ValueError("no CUDA GPU is visible")
    return f"{major}.{minor}"


def parse_compute_version(version: str):
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def have_tensorcore(compute_version=None, target=None) -> bool:
    if compute_version is None:
        compute_version = get_target_compute_version(target)
    return parse_compute_version(compute_version) >= (7, 0)
