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


def test_unknown_kind_suggests_a_known_one():
    with pytest.raises(ValueError, match="unknown target kind 'cdua'") as e:
        parse_target("cdua")
    assert "did you mean 'cuda'" in str(e.value)


def test_bad_default_target_names_the_variable(monkeypatch):
    from tilelang.ir.errors import TileLangError
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "bogus")
    for spec in (None, "auto"):
        with pytest.raises(TileLangError, match="TILELANG_DEFAULT_TARGET='bogus' is not a target"):
            parse_target(spec)


@pytest.mark.skipif(detect_arch() is not None, reason="a GPU is visible")
def test_cuda_without_a_gpu_says_which_arch_it_compiles_for(caplog, monkeypatch):
    from tilelang.backend.cuda import target
    monkeypatch.setattr(target, "_noticed", False)
    with caplog.at_level("WARNING", logger="tilelang"):
        assert parse_target("cuda").arch == DEFAULT_ARCH
        parse_target("cuda")
    notes = [r.getMessage() for r in caplog.records if "no CUDA GPU is visible" in r.getMessage()]
    assert len(notes) == 1 and DEFAULT_ARCH in notes[0]


@pytest.mark.skipif(detect_arch() is not None, reason="a GPU is visible")
def test_main_job_with_cuda_target_without_a_gpu():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "tilelang", "--target", "cuda"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert "no CUDA GPU is visible on this machine" in out.stderr and "Traceback" not in out.stderr
