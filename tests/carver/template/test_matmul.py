"""MatmulTemplate: the published API the autotune examples use, its reference kernel on the
CPU, and a recommended hint's config run through the examples' own GEMM kernel shape."""
import importlib.util
import os

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.carver.arch import CUDA
from tilelang.carver.roller.rasterization import NoRasterization
from tilelang.carver.template import MatmulTemplate


def example_gemm(M, N, K, block_M, block_N, block_K, num_stages, thread_num, enable_rasteration,
                 dtype="float16", accum_dtype="float32"):
    """The kernel shape of examples/gemm/example_gemm_autotune.py (B stored N x K)."""
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=thread_num) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            T.use_swizzle(panel_size=10, enable=enable_rasteration)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])
    return gemm


def configs_of(hints):
    """What the example's get_configs(with_roller=True) reads from each hint."""
    out = []
    for h in hints:
        (bm, bn), (wm, wn) = h.block, h.warp
        out.append(dict(block_M=bm, block_N=bn, block_K=h.rstep[0],
                        num_stages=h.pipeline_stage if h.pipeline_stage > 1 else 0,
                        thread_num=(bm // wm) * (bn // wn) * 32,
                        enable_rasteration=h.rasterization_plan is not NoRasterization))
    return out


def test_published_api():
    t = MatmulTemplate(M=4096, N=4096, K=4096, in_dtype=T.float16, out_dtype=T.float16,
                       accum_dtype=T.float32).with_arch(CUDA("cuda -arch=sm_90a"))
    assert t.equivalent_function() is not None and t.has_arch()
    hints = t.recommend_hints(topk=20)
    assert len(hints) == 20 and all(h.use_tc for h in hints)
    for c in configs_of(hints):
        assert c["thread_num"] in (32, 64, 128, 256) and c["block_K"] in (16, 32, 64)
    assert "M=4096" in repr(t) and t.params_as_dict()["trans_B"] is True


@pytest.mark.parametrize("pair", [("int8", "int32"), ("float16", "float16"), ("bfloat16", "float32")])
def test_published_dtype_pairs_recommend(pair):
    t = MatmulTemplate(M=1024, N=1024, K=1024, in_dtype=pair[0], out_dtype=pair[1],
                       accum_dtype=pair[1]).with_arch(CUDA("cuda -arch=sm_80"))
    assert t.recommend_hints(topk=5)


def test_unsupported_precision_falls_back_to_simt():
    t = MatmulTemplate(M=64, N=64, K=64, in_dtype="float64", out_dtype="float64",
                       accum_dtype="float64").with_arch(CUDA("cuda -arch=sm_90a"))
    hints = t.recommend_hints(3)
    assert hints and not any(h.use_tc for h in hints)


def test_a_hint_runs_on_the_cpu_through_the_example_kernel():
    M, N, K = 96, 80, 72     # several tiles, ragged edges
    t = MatmulTemplate(M=M, N=N, K=K, in_dtype=T.float16, out_dtype=T.float16,
                       accum_dtype=T.float32).with_arch(CUDA("cuda -arch=sm_90a"))
    config = configs_of(t.recommend_hints(topk=1))[0]
    kern = tilelang.compile(example_gemm(M, N, K, **config), out_idx=[-1], target="cpu")
    a, b = torch.randn(M, K).half(), torch.randn(N, K).half()
    torch.testing.assert_close(kern(a, b).float(), a.float() @ b.float().T, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("trans_A,trans_B,with_bias", [(False, True, False), (True, False, True),
                                                       (False, False, False)])
def test_equivalent_function_computes_the_matmul(trans_A, trans_B, with_bias):
    M, N, K = 70, 50, 40
    t = MatmulTemplate(M=M, N=N, K=K, trans_A=trans_A, trans_B=trans_B, with_bias=with_bias,
                       in_dtype="float16", out_dtype="float32", accum_dtype="float32")
    kern = tilelang.compile(t.equivalent_function(), out_idx=[-1], target="cpu")
    a, b, bias = torch.randn(M, K).half(), torch.randn(N, K).half(), torch.randn(N)
    args = [a.T.contiguous() if trans_A else a, b if trans_B else b.T.contiguous()]
    out = kern(*args, bias) if with_bias else kern(*args)
    ref = a.float() @ b.float().T + (bias if with_bias else 0)
    torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)


_EXAMPLES = os.environ.get("TL_PUB_EXAMPLES", os.path.join(os.path.dirname(__file__), *[".."] * 3,
                                                           ".pub", "examples"))


@pytest.mark.skipif(not os.path.isdir(os.path.join(_EXAMPLES, "gemm")), reason="no published examples")
def test_published_autotune_example_gets_roller_configs():
    spec = importlib.util.spec_from_file_location(
        "example_gemm_autotune", os.path.join(_EXAMPLES, "gemm", "example_gemm_autotune.py"))
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    configs = ex.get_configs(4096, 4096, 4096, with_roller=True)
    assert len(configs) == 20 and all(c["block_K"] > 0 and c["thread_num"] >= 32 for c in configs)
