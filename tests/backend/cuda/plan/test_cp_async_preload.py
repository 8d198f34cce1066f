"""plan/cp_async_preload.py (`preload_cp_async`): a shared tile loaded right before a cp.async
pipeline, that only the pipelined loop's body reads (the FlashAttention backward's K and V),
is issued as cp.async in the prologue's first commit group instead of being loaded and
stored before it; a tile also used after the loop, or before a num_stages=1 loop, keeps its
vector form. TILELANG_CUDA_CP_ASYNC_PRELOAD=0 keeps every such copy synchronous (A/B).
Checked on the copy forms the pass records; no GPU or NVRTC needed."""
import pytest

import tilelang.language as T
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.analysis.facts import parallel_nest
from tilelang.backend.cuda.ops.vector_copy import match_copy, without_assumes
from tilelang.backend.cuda.plan.copy_form import copy_form
from tilelang.backend.cuda.plan.cp_async_preload import preload_cp_async
from tests.backend.cuda.kernels_attn_bwd import attention_bwd
from tests.backend.cuda.plan.test_plan_kernels import _launch, _lower_to


def _forms(func, arch="sm_90a"):
    """{shared tile filled from global memory: its copy forms (str)}."""
    _, after, _ = _lower_to(func, preload_cp_async, arch=arch)
    out = {}

    def f(n):
        if isinstance(n, S.For) and copy_form(n) is not None:
            m = match_copy(without_assumes(parallel_nest(n)[3]))
            if m is not None and m[2].buffer.scope == "global" and m[1].buffer.scope.startswith("shared"):
                out.setdefault(m[1].buffer.name, []).append(str(copy_form(n)))
    walk(_launch(after).body, f)
    return out


def tile_then_pipeline(read_after=False, stages=2, K=512):
    """W (64 x 64) loaded before a pipelined GEMM over A's tiles; `read_after`: W is also
    read after the loop."""
    @T.prim_func
    def main(A: T.Tensor((64, K), "float16"), W: T.Tensor((64, 64), "float16"),
             C: T.Tensor((64, 64), "float32"), D: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            Ws = T.alloc_shared((64, 64), "float16")
            Cl = T.alloc_fragment((64, 64), "float32")
            T.copy(W, Ws)
            T.clear(Cl)
            for k in T.Pipelined(K // 64, num_stages=stages):
                As = T.alloc_shared((64, 64), "float16")
                T.copy(A[0, k * 64], As)
                T.gemm(As, Ws, Cl, transpose_B=True)
            T.copy(Cl, C)
            if read_after:
                T.copy(Ws, D)
    return main


@pytest.mark.parametrize("on", ["1", "0"])
def test_attention_backward_loads_k_and_v_with_the_first_group(monkeypatch, on):
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_PRELOAD", on)
    forms = _forms(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128))
    want = "cp.async x8 (16 B)" if on == "1" else "vector x8 (16 B)"
    assert forms["k_s"] == [want] and forms["v_s"] == [want], forms
    assert forms["q_s"] == ["cp.async x8 (16 B)"] * 2, forms   # the pipeline's own copies: prologue, refill


def test_a_tile_only_the_loop_reads_joins_the_prologue():
    assert _forms(tile_then_pipeline(), arch="sm_80")["Ws"] == ["cp.async x8 (16 B)"]


def test_a_tile_read_after_the_loop_stays_synchronous():
    assert _forms(tile_then_pipeline(read_after=True), arch="sm_80")["Ws"] == ["vector x8 (16 B)"]


def test_a_num_stages_1_loop_keeps_the_tile_synchronous():
    # its groups are waited for before their first reader only: W would not be covered
    assert _forms(tile_then_pipeline(stages=1), arch="sm_80")["Ws"] == ["vector x8 (16 B)"]


def test_the_printed_cuda_issues_k_before_the_prologue_commit():
    pytest.importorskip("cuda.bindings")
    from tests.backend.cuda.helpers import build
    src = build(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128)).source
    k = src.index("tl::cp_async_gs<16>(&k_s[")
    assert k < src.index("tl::cp_async_gs<16>(&v_s[") < src.index("tl::cp_async_commit();")
