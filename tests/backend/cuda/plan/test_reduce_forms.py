"""plan/reduce_forms.py: the pass that records on each block-level T.reduce_* the form it
runs in (ops/reduce.py `reduce_form`, printed after the op); a reduction on partial warps is
its loop (plan/copy_forms.py, by the same rule); the forms survive the passes after it."""
import pytest

import tilelang.language as T
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.reduce_forms import plan_reduce_forms
from tilelang.backend.registry import parse_target
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda.plan.around import around, lines_with


def shared_rows(M, N, threads=128, batch=1):
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((M, N), "float32")
            r = T.alloc_shared((M,), "float32")
            T.copy(A, s)
            T.reduce_sum(s, r, dim=1, batch=batch)
            T.copy(r, B)
    return k


def fragment_rows(M=64, N=128):
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((M, N), "float32")
            r = T.alloc_fragment((M,), "float32")
            T.copy(A, f)
            T.reduce_max(f, r, dim=1)
            T.copy(r, B)
    return k


def gemm_rows():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            r = T.alloc_fragment((64,), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, acc, clear_accum=True)
            T.reduce_max(acc, r, dim=1)
            T.copy(r, C)
    return k


def per_thread_rows():
    @T.prim_func
    def k(A: T.Tensor((128, 4, 8), "float32"), B: T.Tensor((128, 4), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            x = T.alloc_local((4, 8), "float32")
            y = T.alloc_local((4,), "float32")
            for i, j in T.Parallel(4, 8):
                x[i, j] = A[tx, i, j]
            T.reduce_sum(x, y, dim=1)
            for i in T.serial(4):
                B[tx, i] = y[i]
    return k


def _forms(text):
    return [ln.split("  # -> ", 1)[1] for ln in lines_with(text, "T.reduce_")]


@pytest.mark.parametrize("func,form", [
    (shared_rows(64, 64), "warp shuffles, a row a warp"),
    (shared_rows(64, 4), "warp shuffles, a row on 4 lanes (8 rows a warp at once)"),
    (shared_rows(64, 64, batch=4), "warp shuffles, 4 rows a warp together (tl::warp_reduce_rows)"),
    (fragment_rows(), "thread-tile rows (slots, then warp shuffles and a shared round across warps)"),
    (gemm_rows(), "accumulator rows (slots, then its quad's shuffles)"),
    (per_thread_rows(), "per thread (both operands in each thread's own registers)"),
])
def test_each_reduction_gets_its_form(func, form):
    before, after = around(func, plan_reduce_forms)
    assert "  # -> " not in "".join(lines_with(before, "T.reduce_"))
    assert _forms(after) == [form], after


def test_column_groups_of_an_accumulator():
    from tests.backend.cuda.layout.indexer_kernels import indexer
    _, after = around(indexer(H=16, block_Q=8, dtype="float16"), plan_reduce_forms)
    assert "column groups of the accumulator (slots, then its quad's shuffles)" in _forms(after)


def test_partial_warps_run_the_reduction_as_its_loop():
    # 48 threads: not whole warps; plan_copy_forms made it its loop, nothing left to this pass
    before, after = around(shared_rows(64, 64, threads=48), plan_reduce_forms)
    assert not lines_with(before, "T.reduce_") and before == after


def test_the_form_survives_the_passes_after_it():
    # a reduction in a pipelined body: pipeline_cp_async rebuilds the body (ir/visitor.py Mutator)
    @T.prim_func
    def k(A: T.Tensor((256, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((4, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            r = T.alloc_fragment((64,), "float32")
            T.copy(B, b)
            for t in T.Pipelined(4, num_stages=2):
                T.copy(A[t * 64:(t + 1) * 64, :], a)
                T.gemm(a, b, acc, clear_accum=True)
                T.reduce_max(acc, r, dim=1)
                T.copy(r, C[t, :])
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": "sm_80"})
    text = func_str(run_passes(k, P.PASSES, ctx))
    reductions = lines_with(text, "T.reduce_max")
    assert reductions and all(ln.endswith("# -> accumulator rows (slots, then its quad's shuffles)")
                              for ln in reductions), text
