"""HIP targets through the backend registry: "hip", "hip -arch=...", dicts, "rocm"."""
import pytest

from tilelang.backend.registry import get_backend, parse_target, known_kinds


@pytest.mark.parametrize("spec,arch", [
    ("hip", "gfx90a"), ("hip -arch=gfx90a", "gfx90a"), ("hip -arch=gfx940", "gfx940"),
    ({"kind": "hip", "arch": "gfx940"}, "gfx940"), ("rocm", "gfx90a"), ("rocm -arch=gfx942", "gfx942"),
    ({"kind": "rocm", "arch": "GFX90A"}, "gfx90a"), ("hip -mcpu=gfx940", "gfx940"),
    ("hip -arch=gfx90a:sramecc+:xnack-", "gfx90a"),
])
def test_parse(spec, arch):
    t = parse_target(spec)
    assert (t.kind, t.arch) == ("hip", arch)
    assert str(t) == f"hip -arch={arch}"
    assert get_backend(t.kind).name == "hip"


def test_rocm_is_the_hip_backend():
    assert get_backend("rocm") is get_backend("hip")
    assert {"hip", "rocm"} <= known_kinds()


@pytest.mark.parametrize("arch", ["gfx1100", "sm_90a", "gfx908x"])
def test_unsupported_arch_is_named(arch):
    with pytest.raises(ValueError, match=arch):
        parse_target(f"hip -arch={arch}")
