import pytest

from tilelang.backend.registry import parse_target
from tilelang.backend.cuda.target import normalize_arch, DEFAULT_ARCH, detect_arch


def test_parse_forms():
    assert parse_target("cuda -arch=sm_80").arch == "sm_80"
    assert parse_target({"kind": "cuda", "arch": "sm_90a"}).arch == "sm_90a"
    t = parse_target("cuda")
    assert t.kind == "cuda" and t.arch == (detect_arch() or DEFAULT_ARCH)


def test_normalize():
    assert normalize_arch("80") == "sm_80"
    assert normalize_arch("compute_90a") == "sm_90a"
    with pytest.raises(ValueError):
        normalize_arch("ampere")
