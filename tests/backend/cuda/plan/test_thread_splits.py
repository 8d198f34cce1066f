"""plan/thread_splits.py: the pass that records on each cooperative nest how its iterations
are shared out over the block's threads (ops/vector_copy.py `thread_split`: exact, guarded,
strided), printed after the nest's form; a ranged branch (`if tx < 128:`) splits over its own
threads."""
import pytest

import tilelang.language as T
from tilelang.backend.cuda.plan.thread_splits import plan_thread_splits
from tests.backend.cuda.plan.around import around, lines_with


def tile_copy(rows, cols=64, threads=128):
    """G -> shared -> H: rows x cols halves, 8 a vector."""
    @T.prim_func
    def k(G: T.Tensor((rows, cols), "float16"), H: T.Tensor((rows, cols), "float16")):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((rows, cols), "float16")
            T.copy(G, s)
            T.copy(s, H)
    return k


def ranged_copy():
    """The copies in a branch of 128 of the block's 256 threads."""
    @T.prim_func
    def k(G: T.Tensor((64, 64), "float16"), H: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            s = T.alloc_shared((64, 64), "float16")
            if tx < 128:
                T.copy(G, s)
                T.copy(s, H)
    return k


def _notes(text):
    return [ln.split("  # ", 1)[1] for ln in lines_with(text, "T.Parallel(") if "  # " in ln]


@pytest.mark.parametrize("rows,config,notes", [
    # 64 x 64 halves: 512 vectors, 4 a thread
    (64, None, ["copy -> vector x8 (16 B); exact split, 4 a thread"] * 2),
    # 40 x 64: 320 vectors, 2.5 a thread: unrolled 3 times, the last copy bound-checked
    (40, None, ["copy -> vector x8 (16 B); guarded split, at most 3 a thread"] * 2),
    (40, {"TILELANG_CUDA_GUARDED_SPLIT": "0"}, ["copy -> vector x8 (16 B); strided split, unrolled"] * 2),
    # 256 x 64: 2048 vectors, 16 a thread: the load waited for once (plan/copy_forms.py), both strided
    (256, None, ["copy -> cp.async + wait x8 (16 B); strided split", "copy -> vector x8 (16 B); strided split"]),
])
def test_the_split_of_each_nest(rows, config, notes, monkeypatch):
    for name, value in (config or {}).items():
        monkeypatch.setenv(name, value)
    before, after = around(tile_copy(rows), plan_thread_splits, arch="sm_80")
    assert "split" not in before
    assert _notes(after) == notes, after


def test_a_ranged_branch_splits_over_its_own_threads():
    # 512 vectors on the branch's 128 threads: 4 each (2 on the block's 256)
    _, after = around(ranged_copy(), plan_thread_splits, arch="sm_80")
    assert _notes(after) == ["copy -> vector x8 (16 B); exact split, 4 a thread"] * 2, after


def test_register_nests_get_no_split():
    @T.prim_func
    def k(A: T.Tensor((64, 128), "float32"), B: T.Tensor((64, 128), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((64, 128), "float32")
            T.copy(A, f)
            for i, j in T.Parallel(64, 128):
                f[i, j] = f[i, j] * 2
            T.copy(f, B)
    before, after = around(k, plan_thread_splits)
    assert before == after and "split" not in after


def test_a_tma_copy_on_cp_async_carries_its_split():
    # the producer range (128 of 384 threads) issues each T.tma_copy as cp.async on its mbarrier:
    # A's 128 x 64 halves are 8 vectors a thread, B's 64 x 256 are 16 (strided)
    from tests.backend.cuda.kernels_ws import ws_gemm_tma
    _, after = around(ws_gemm_tma(1024, 1024, 1024), plan_thread_splits)
    notes = [ln.split("  # -> ", 1)[1] for ln in lines_with(after, "T.tma_copy(")]
    form = "T.tma_copy as cp.async arriving on its mbarrier x8 (16 B)"
    assert notes == [f"{form}; exact split, 8 a thread", f"{form}; strided split"] * 4, after


def gathered_copy(rows=64, cols=512, threads=256, stages=2):
    """Rows of KV gathered by an index tensor into a pipelined shared tile (the sparse MLA
    kernels' `KV[Indices[...], d]`): 16 cp.async vectors a thread a stage."""
    @T.prim_func
    def k(KV: T.Tensor((1024, cols), "bfloat16"), Idx: T.Tensor((4 * rows,), "int32"),
          O: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_fragment((rows, cols), "float32")
            T.clear(acc)
            for it in T.Pipelined(4, num_stages=stages):
                s = T.alloc_shared((rows, cols), "bfloat16")
                for i, d in T.Parallel(rows, cols):
                    s[i, d] = KV[Idx[it * rows + i], d]
                for i, d in T.Parallel(rows, cols):
                    acc[i, d] += s[i, d]
            T.copy(acc, O)
    return k


def test_a_gathered_cp_async_copy_is_unrolled(monkeypatch):
    # 64 x 512 halves: 4096 vectors, 16 a thread; each address reads Idx: in a strided loop
    # every copy would wait for its index load, unrolled the 16 loads are in flight at once
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_UNROLL", "0")
    _, after = around(gathered_copy(), plan_thread_splits)
    notes = [n for n in _notes(after) if "cp.async" in n]
    assert notes and all(n.endswith("exact split, 16 a thread") for n in notes), after
    # the same copy from affine addresses keeps the strided loop under TILELANG_CUDA_CP_ASYNC_UNROLL=0
    _, plain = around(tile_copy(512, 64, threads=256), plan_thread_splits)
    assert all("exact split, 16" not in n for n in _notes(plain)), plain


@pytest.mark.gpu
def test_a_gathered_cp_async_copy_runs():
    import torch
    import tilelang
    kv = torch.randn(1024, 512, dtype=torch.bfloat16, device="cuda")
    idx = torch.randperm(1024, device="cuda")[:256].int()
    out = torch.empty(64, 512, device="cuda")
    tilelang.compile(gathered_copy(), target="cuda")(kv, idx, out)
    ref = kv.float()[idx.long()].view(4, 64, 512).sum(0)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
