"""Device descriptions: arch strings, datasheet figures without a GPU, tensor-core dtypes."""
import pytest

from tilelang.carver.arch import (CDNA, CUDA, check_sm_version, get_arch, is_ampere_arch,
                                  is_cdna_arch, is_hopper_arch, is_tensorcore_supported_precision)


def test_check_sm_version():
    assert [check_sm_version(a) for a in ("sm_80", "sm_90a", "90", "sm_100a")] == [80, 90, 90, 100]
    assert [check_sm_version(a) for a in ("gfx942", "sm_", "sm_sm_90", "")] == [-1] * 4


def test_cuda_figures_of_the_target_arch():
    h, a = CUDA("cuda -arch=sm_90a"), CUDA("cuda -arch=sm_80")
    assert is_hopper_arch(h) and not is_ampere_arch(h) and is_ampere_arch(a)
    assert h.num_sms == h.compute_max_core > 0 and h.smem_cap >= a.smem_cap > 48 * 1024
    assert h.warp_size == 32 and h.reg_cap == 65536


def test_tensorcore_precisions():
    h, a = CUDA("cuda -arch=sm_90a"), CUDA("cuda -arch=sm_80")
    assert is_tensorcore_supported_precision("float16", "float32", a)
    assert is_tensorcore_supported_precision("int8", "int32", a)
    assert is_tensorcore_supported_precision("float8_e4m3", "float32", h)
    assert not is_tensorcore_supported_precision("float8_e4m3", "float32", a)
    assert not is_tensorcore_supported_precision("float64", "float64", h)


def test_cdna_and_get_arch():
    c = get_arch("hip -arch=gfx942")
    assert isinstance(c, CDNA) and is_cdna_arch(c) and c.warp_size == 64 and c.num_sms == 304
    assert isinstance(get_arch("cuda -arch=sm_80"), CUDA)
    with pytest.raises(ValueError, match="not a CUDA one"):
        CUDA("hip")
