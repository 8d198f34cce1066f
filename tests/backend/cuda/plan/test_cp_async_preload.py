"""plan/cp_async_preload.py (`preload_cp_async`): a shared tile loaded right before a cp.async
pipeline, that only the pipelined loop's body reads (the FlashAttention backward's K and V),
is issued as cp.async in the prologue's first commit group instead of being loaded and
stored before it; so is one read after a loop that certainly runs, and one before a num_stages=1
loop whose body reads it after its first wait (the FlashAttention forward's Q); a tile read after
a loop that may run no iteration, or read in a num_stages=1 body before its first wait, keeps its
form. TILELANG_CUDA_CP_ASYNC_PRELOAD=0 keeps every such copy synchronous (A/B).
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
from tests.backend.cuda.plan.around import around, lines_with
from tests.backend.cuda.helpers import load_example


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


def tile_then_pipeline(read_after=False, stages=2, K=512, dynamic=False, read_first=False):
    """W (64 x 64) loaded before a pipelined GEMM over A's tiles; `read_after`: W is also
    read after the loop; `dynamic`: a trip count known at run time only; `read_first`: the body
    reads W before it waits for its first tile. The body scales the accumulator after its gemm
    (work a num_stages=1 refill overlaps)."""
    Kd = T.dynamic("K") if dynamic else K

    @T.prim_func
    def main(A: T.Tensor((Kd, 64), "float16"), W: T.Tensor((64, 64), "float16"),
             C: T.Tensor((64, 64), "float32"), D: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            Ws = T.alloc_shared((64, 64), "float16")
            Cl = T.alloc_fragment((64, 64), "float32")
            T.copy(W, Ws)
            T.clear(Cl)
            for k in T.Pipelined(Kd // 64, num_stages=stages):
                As = T.alloc_shared((64, 64), "float16")
                if read_first:
                    for i, j in T.Parallel(64, 64):
                        Cl[i, j] += Ws[i, j]
                T.copy(A[k * 64, 0], As)
                T.gemm(As, Ws, Cl, transpose_B=True)
                for i, j in T.Parallel(64, 64):
                    Cl[i, j] *= 0.5
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


def test_a_tile_read_after_a_loop_that_certainly_runs_joins_the_prologue():
    # the loop's first wait and barrier come before the read after it
    assert _forms(tile_then_pipeline(read_after=True), arch="sm_80")["Ws"] == ["cp.async x8 (16 B)"]


def test_a_tile_read_after_a_loop_that_may_not_run_stays_synchronous():
    forms = _forms(tile_then_pipeline(read_after=True, dynamic=True), arch="sm_80")
    assert forms["Ws"] == ["vector x8 (16 B)"], forms
    forms = _forms(tile_then_pipeline(dynamic=True), arch="sm_80")   # read by the loop only: joins
    assert forms["Ws"] == ["cp.async x8 (16 B)"], forms


def test_a_num_stages_1_loop_takes_a_tile_its_body_reads_after_the_first_wait():
    # the gemm that reads W waits for A's first tile (the group W joins) and its barrier
    assert _forms(tile_then_pipeline(stages=1), arch="sm_80")["Ws"] == ["cp.async x8 (16 B)"]


def test_a_num_stages_1_loop_keeps_a_tile_its_body_reads_before_the_first_wait():
    assert _forms(tile_then_pipeline(stages=1, read_first=True), arch="sm_80")["Ws"] == ["vector x8 (16 B)"]


def test_a_num_stages_1_loop_that_may_not_run_keeps_the_tile():
    # its prologue (the group's commit) runs only where the loop does
    assert _forms(tile_then_pipeline(stages=1, dynamic=True), arch="sm_80")["Ws"] == ["vector x8 (16 B)"]


def test_flash_attention_forward_with_one_stage_loads_q_with_k():
    """The published example_mha_fwd_bshd's regression configuration (128 x 128 tiles, one stage,
    128 threads): Q, a `cp.async + wait` copy of its own before, joins K's first group."""
    FA = load_example("flash_attention", "preload")
    f = FA.flash_attention.func(1, 4, 256, 256, 128, is_causal=False, layout="bshd", block_M=128, block_N=128,
                                num_stages=1, threads=128)
    before, after = around(f, preload_cp_async)
    assert lines_with(before, "Q -> Q_shared") == ["#   Q -> Q_shared (line 61): cp.async + wait x8 (16 B)"]
    forms = _forms(f)
    assert forms["Q_shared"] == ["cp.async x8 (16 B)"], forms


def test_the_printed_cuda_issues_k_before_the_prologue_commit():
    pytest.importorskip("cuda.bindings")
    from tests.backend.cuda.helpers import build
    src = build(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128)).source
    k = src.index("tl::cp_async_gs<16>(&k_s[")
    assert k < src.index("tl::cp_async_gs<16>(&v_s[") < src.index("tl::cp_async_commit();")


@pytest.mark.gpu
@pytest.mark.parametrize("s,d,causal,joined", [(256, 128, False, True), (512, 64, False, True),
                                               (384, 128, True, False)])   # (causal: a trip count per block)
def test_flash_attention_forward_with_q_in_the_first_group_matches_torch(s, d, causal, joined):
    import tilelang
    from tests.backend.cuda.helpers import check_flash_attention
    FA = load_example("flash_attention", "preload_gpu")
    f = FA.flash_attention.func(1, 4, s, s, d, is_causal=causal, layout="bhsd", block_M=128, block_N=128,
                                num_stages=1, threads=128)
    assert _forms(f)["Q_shared"] == ["cp.async x8 (16 B)" if joined else "cp.async + wait x8 (16 B)"]
    check_flash_attention(FA, tilelang.compile(f, out_idx=[3], target="cuda"), 1, 4, s, s, d, causal)
