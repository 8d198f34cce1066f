"""plan/plan_kernels.py: the kernel plan (where buffers live, how gemms run, which loops
are pipelined) is a pass of the CUDA pipeline; it travels on the launch node and prints
with the IR, so the lower trace shows it."""
import copy

import pytest

from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.plan_kernels import plan_kernels, kernel_plan
from tilelang.ir import stmt as S
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda.plan.test_copy_forms import gemm, tile_copy


def _lower_to(func, last, arch="sm_90a"):
    """The function after the CUDA passes up to `last`, and before it (printed)."""
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    k = P.PASSES.index(last)
    before = run_passes(func, P.PASSES[:k], ctx)
    text = func_str(before)
    return text, P.PASSES[k](before, ctx), ctx


def _launch(func):
    stmts = func.body.stmts if isinstance(func.body, S.SeqStmt) else [func.body]
    return next(s for s in stmts if isinstance(s, S.KernelLaunch))


def test_the_plan_is_printed_under_the_kernel():
    before, after, _ = _lower_to(gemm(), plan_kernels)
    text = func_str(after)
    assert "# kernel plan" not in before
    lines = [ln.strip() for ln in text.splitlines()]
    start = lines.index("# kernel plan: 256 threads, 196608 B of dynamic shared memory")
    assert lines[start - 1].startswith("with T.Kernel(")
    plan = lines[start:start + 10]   # the buffers (the staged epilogue tile too), the gemm, the stages
    assert "#   T.gemm(As, Bs, Cf): wgmma m64n256k16, A from shared" in plan
    assert "#   4 stages over As, Bs" in plan
    assert any(ln.startswith("#   As ") and "4 stages of 16384 B, sw128" in ln for ln in plan)


def test_the_plan_runs_before_the_copy_forms_that_read_it():
    assert P.PASSES.index(plan_kernels) < P.PASSES.index(P.plan_copy_forms)
    _, after, ctx = _lower_to(tile_copy(), plan_kernels)
    launch = _launch(after)
    plan = kernel_plan(launch)
    assert plan is not None and plan.nthreads == 128
    text = func_str(P.plan_copy_forms(after, ctx))
    assert "#   S -> H" in text and "TMA store" in text   # the plan's copies, after the forms
    assert kernel_plan(_launch(after)) is plan            # read, not made again


def test_the_input_is_not_changed():
    """The pass owns the nests the later CUDA passes annotate: the input keeps its own."""
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": "sm_90a"})
    before = run_passes(tile_copy(), P.PASSES[:P.PASSES.index(plan_kernels)], ctx)
    text = func_str(before)
    P.plan_copy_forms(plan_kernels(before, ctx), ctx)
    assert func_str(before) == text and "->" not in text


def test_a_rebuilt_body_is_refused():
    """The plan names nodes by identity: a pass that rebuilds the body invalidates it loudly."""
    _, after, _ = _lower_to(tile_copy(), plan_kernels)
    launch = copy.copy(_launch(after))
    launch.body = S.SeqStmt([launch.body])
    with pytest.raises(AssertionError, match="kernel plan was made for another tree"):
        kernel_plan(launch)


def test_the_lower_trace_page_of_the_pass(tmp_path, monkeypatch):
    import tilelang
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path))
    tilelang.lower(tile_copy(), target={"kind": "cuda", "arch": "sm_90a"})
    pages = [p for p in tmp_path.iterdir() if p.name.endswith("_plan_kernels.py")]
    assert len(pages) == 1
    assert "# kernel plan: 128 threads" in pages[0].read_text()


def test_a_wgmma_plan_that_overflows_shared_memory_gives_way_to_mma(monkeypatch):
    """The published sparse MLA backward (deepseek_v32, H=64): two gemms on wgmma keep their
    accumulators in shared memory and the buffers need 237568 bytes; on mma.sync they fit
    (226432). plan_kernel takes the plan that fits and says why; when neither fits, the wgmma
    plan stays (and the printer reports the overflow at the user's kernel)."""
    from types import SimpleNamespace
    from tilelang.backend.cuda.plan import kernel as PK
    limit = PK.max_dynamic_smem("sm_90a")
    sizes = {False: limit + 5120, True: limit - 6016}

    def fake(launch, arch, options, mma_only):
        return SimpleNamespace(smem_bytes=sizes[mma_only], uses_wgmma=not mma_only, notes=[], mma_only=mma_only)
    monkeypatch.setattr(PK, "_plan_kernel", fake)
    plan = PK.plan_kernel(None, "sm_90a")
    assert plan.mma_only and plan.notes == [f"gemms on mma.sync: with wgmma's layouts the shared buffers need "
                                            f"{limit + 5120} bytes, more than the {limit} one block may use"]
    sizes[True] = limit + 1
    assert not PK.plan_kernel(None, "sm_90a").mma_only
    sizes[False] = limit   # fits: no second plan
    assert not PK.plan_kernel(None, "sm_90a").mma_only
