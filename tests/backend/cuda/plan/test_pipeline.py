"""plan/pipeline.py follows T.Pipelined's PipelineSpec: the depth (num_stages, or
max(stage) + 1 for a manual schedule), which copies are issued ahead (`stage`), and says in
the plan report what of a schedule it does not follow. The plan of an sm_80 kernel after
the CUDA passes, no GPU or NVRTC needed."""
import pytest

import tilelang.language as T
from tilelang.backend.cuda.plan.plan_kernels import kernel_plan
from tilelang.backend.cuda.plan.report import format_plan
from tilelang.backend.registry import get_backend, parse_target
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk


def _gemm(**kw):
    M = N = K = 256
    bM = bN = 128
    bK = 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            As = T.alloc_shared((bM, bK), "float16")
            Bs = T.alloc_shared((bK, bN), "float16")
            Cl = T.alloc_fragment((bM, bN), "float32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bK), **kw):
                T.copy(A[by * bM, k * bK], As)
                T.copy(B[k * bK, bx * bN], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * bM, bx * bN])
    return main


def _plan(f, arch="sm_80"):
    target = parse_target({"kind": "cuda", "arch": arch})
    lowered = get_backend("cuda").lower(f, target, None)
    launches = []
    walk(lowered.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    plan = kernel_plan(launches[0])   # the plan the passes attached (the pipelined loop is scheduled by now)
    return plan, format_plan("k", launches[0], plan)


def _pipeline(text):
    """The report's pipeline lines (and their notes)."""
    lines = text.splitlines()
    if "pipelines:" not in lines:
        return []
    out = []
    for ln in lines[lines.index("pipelines:") + 1:]:
        if not ln.startswith("  "):
            break
        out.append(ln.strip())
    return out


@pytest.mark.parametrize("kw,expected", [
    (dict(num_stages=3), ["3 stages over As, Bs"]),
    (dict(num_stages=0), []),
    # a manual schedule: as deep as its last stage, both copies ahead
    (dict(order=[0, 1, 2], stage=[0, 0, 1]), ["2 stages over As, Bs"]),
    (dict(order=[0, 1, 2], stage=[0, 0, 2]), ["3 stages over As, Bs"]),
    # num_stages overrides the depth a manual schedule implies
    (dict(num_stages=3, order=[0, 1, 2], stage=[0, 0, 1]), ["3 stages over As, Bs"]),
    # A in the last stage: loaded in its own iteration, only B is issued ahead
    (dict(order=[1, 0, 2], stage=[1, 0, 1]), ["2 stages over Bs"]),
])
def test_depth_and_copies_issued_ahead_follow_the_spec(kw, expected):
    assert _pipeline(_plan(_gemm(**kw))[1]) == expected


def test_what_the_pipeliner_does_not_follow_is_noted():
    lines = _pipeline(_plan(_gemm(order=[1, 2, 0], stage=[0, 0, 2]))[1])
    assert lines[0] == "3 stages over As, Bs"
    assert lines[1].startswith("note: order=[1, 2, 0] not followed: the copies for later iterations are issued "
                               "first, then the rest of the body in program order")
    lines = _pipeline(_plan(_gemm(order=[0, 1, 2], stage=[0, 1, 2]))[1])
    assert lines == ["3 stages over As, Bs", "note: copies of stages [0, 1] are all issued 2 iterations ahead"]
    lines = _pipeline(_plan(_gemm(num_stages=2, sync=[[0, 1]], group=[[0, 1], [2]]))[1])
    assert lines[1].startswith("note: sync= / group= have no effect")


def test_a_gemm_scheduled_ahead_stays_in_its_iteration():
    plan, text = _plan(_gemm(order=[0, 1, 2], stage=[0, 0, 0]))
    assert _pipeline(text) == []        # max(stage) + 1 == 1: nothing in flight
    plan, text = _plan(_gemm(order=[0, 1, 2], stage=[1, 1, 0]))
    assert not plan.pipelines and "note: statement 2 (stage 0) runs in its own iteration" in text


def test_the_report_of_a_default_spec_is_unchanged():
    assert _pipeline(_plan(_gemm(num_stages=2))[1]) == ["2 stages over As, Bs"]


@pytest.mark.gpu
@pytest.mark.parametrize("config", [None, {"tl.disable_tma_lower": True}])
@pytest.mark.parametrize("order,stage", [([0, 1, 2], [0, 0, 1]), ([0, 1, 2], [0, 0, 2]), ([1, 2, 0], [0, 0, 2]),
                                         ([1, 2, 0], [0, 0, 1]), ([1, 0, 2], [1, 0, 1]), ([0, 1, 2], [0, 1, 2])])
def test_manual_schedules_compute_the_product_on_the_gpu(config, order, stage):
    # the published package's own order/stage cases (testing/python/language/test_tilelang_language_pipeline.py)
    torch = pytest.importorskip("torch")
    be = get_backend("cuda")
    art = be.build(_gemm(order=order, stage=stage), parse_target("cuda"), config)
    a = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    c = torch.full((256, 256), float("nan"), device="cuda", dtype=torch.float16)
    be.load(art)([a, b, c], (), ())
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)
