"""Conversions two lanes at a time (backend/cuda/ops/vector_cast.py): a cast copy between
memory moves whole vectors and converts pairs; a cast between register tiles converts
pairs. Checked in SASS (fewer memory and conversion instructions) and, on the GPU,
against torch's conversions."""
import pytest
import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build, sass_ops

PAIRS = [("float32", "float16"), ("float16", "float32"), ("float32", "bfloat16"), ("bfloat16", "float32"),
         ("float32", "float8_e4m3fn"), ("float32", "float8_e5m2"), ("float8_e4m3fn", "float32"),
         ("float8_e5m2", "float32"), ("float8_e4m3fn", "float16"), ("float16", "float8_e5m2")]


def _copy(M, s, d):
    @T.prim_func
    def main(A: T.Tensor((M,), s), B: T.Tensor((M,), d)):
        with T.Kernel(1, threads=128):
            T.copy(A, B)
    return main


def _through_registers(M, s, d):
    @T.prim_func
    def main(A: T.Tensor((M,), s), B: T.Tensor((M,), d)):
        with T.Kernel(1, threads=128):
            A_local = T.alloc_fragment((M,), s)
            B_local = T.alloc_fragment((M,), d)
            T.copy(A, A_local)
            for i in T.Parallel(M):
                B_local[i] = A_local[i]
            T.copy(B_local, B)
    return main


@needs_sass
@pytest.mark.parametrize("s,d", [("float32", "float16"), ("float32", "bfloat16"), ("float32", "float8_e4m3fn")])
def test_a_cast_copy_is_one_vector_and_paired_conversions(s, d):
    ops = sass_ops(build(_copy(512, s, d)))     # 4 elements a thread
    assert ops["LDG"] == 1 and ops["STG"] == 1 and ops["F2FP"] == 2


@needs_sass
def test_a_register_cast_converts_pairs():
    ops = sass_ops(build(_through_registers(1024, "float32", "float16")))   # 8 elements a thread
    assert ops["F2FP"] == 4


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", [_copy, _through_registers])
@pytest.mark.parametrize("lanes", [2, 4])
@pytest.mark.parametrize("s,d", PAIRS)
def test_paired_conversions_match_torch(kernel, lanes, s, d):
    M = 128 * lanes
    k = tilelang.compile(kernel(M, s, d), out_idx=[1], target="cuda")
    a = (torch.randn(M, device="cuda") * 4).to(getattr(torch, s))
    torch.testing.assert_close(k(a), a.to(getattr(torch, d)), rtol=0, atol=0)


E8M0_PAIRS = [("float32", "float8_e8m0fnu", "__tl_cvt_float2_to_e8m0x2"),
              ("float64", "float8_e8m0fnu", "__tl_cvt_double2_to_e8m0x2"),
              ("bfloat16", "float8_e8m0fnu", "__tl_cvt_bfloat162_to_e8m0x2"),
              ("float8_e8m0fnu", "bfloat16", "__tl_cvt_e8m0x2_to_bfloat162")]


@pytest.mark.parametrize("kernel", [_copy, _through_registers])
@pytest.mark.parametrize("s,d,helper", E8M0_PAIRS)
def test_e8m0_conversions_are_paired(kernel, s, d, helper):
    from tilelang.backend.cuda.host.nvrtc import nvrtc_available
    if not nvrtc_available():
        pytest.skip("NVRTC not installed")
    assert helper in build(kernel(256, s, d)).source


def _e8m0_inputs(M, s):
    """Powers of two, values just above them, negatives just below them, tiny, huge, zero, NaN."""
    base = torch.tensor([2.0 ** k for k in range(-130, 130, 7)], dtype=torch.float64)
    vals = torch.cat([base, base * 1.0001, -base * 0.9999, torch.tensor([0.0, 1e-40, 3e38, float("nan")],
                                                                       dtype=torch.float64)])
    return vals.repeat(M // len(vals) + 1)[:M].to(getattr(torch, s))


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", [_copy, _through_registers])
@pytest.mark.parametrize("s,d,helper", E8M0_PAIRS[:3])
def test_e8m0_conversions_match_the_cpu_reference(kernel, s, d, helper):
    """Rounding toward +inf, saturating: the CPU backend (the spec) gives the same bytes."""
    import numpy as np
    M = 512
    a = _e8m0_inputs(M, s)
    gpu = tilelang.compile(kernel(M, s, d), out_idx=[1], target="cuda")(a.cuda())
    cpu = tilelang.compile(kernel(M, s, d), out_idx=[1], target="cpu")(a)
    np.testing.assert_array_equal(gpu.cpu().view(torch.uint8).numpy(), cpu.view(torch.uint8).numpy())


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", [_copy, _through_registers])
def test_e8m0_to_bfloat16_is_exact(kernel):
    a = torch.arange(256, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    out = tilelang.compile(kernel(256, "float8_e8m0fnu", "bfloat16"), out_idx=[1], target="cuda")(a.cuda())
    torch.testing.assert_close(out.cpu(), a.to(torch.bfloat16), rtol=0, atol=0, equal_nan=True)


def test_e8m0_of_negative_values_drops_the_sign_on_the_cpu():
    """A scale has no sign: CUDA's conversion and torch's use |x| (the CPU reference too).
    (Magnitudes whose rounding agrees: torch rounds to nearest, CUDA's scalar and paired
    conversions toward +inf, as the CPU reference does.)"""
    a = torch.tensor([-4.0, -3.0, -0.0, 3.0, -1e30, -0.75] * 43, dtype=torch.float32)[:256]
    out = tilelang.compile(_copy(256, "float32", "float8_e8m0fnu"), out_idx=[1], target="cpu")(a)
    assert out.view(torch.uint8).tolist() == a.to(torch.float8_e8m0fnu).view(torch.uint8).tolist()
