"""Conversions two lanes at a time (backend/cuda/vector_cast.py): a cast copy between
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
