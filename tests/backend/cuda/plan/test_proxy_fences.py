"""plan/proxy_fences.py: when wgmma or a bulk copy reads (or writes) shared memory, the
block barriers the compiler inserted fence it toward the async proxy first; the decision
is printed on each barrier node and in the kernel plan."""
import pytest

from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.proxy_fences import plan_proxy_fences
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda.plan.test_copy_forms import tile_copy


def _before_after(func, arch="sm_90a"):
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    k = P.PASSES.index(plan_proxy_fences)
    before = run_passes(func, P.PASSES[:k], ctx)
    text = func_str(before)
    return text, func_str(plan_proxy_fences(before, ctx))


def _barriers(text):
    return [ln.strip() for ln in text.splitlines() if "T.sync_threads()" in ln]


def test_a_bulk_store_of_the_tile_fences_the_barrier_before_it():
    before, after = _before_after(tile_copy())
    assert "# copy -> TMA store" in before
    assert _barriers(before) == ["T.sync_threads()  # inserted: S"]
    assert _barriers(after) == ["T.sync_threads()  # inserted, after a fence.proxy.async: S"]
    assert "# barriers: each fences shared memory toward the async proxy first (its tensor-core or bulk-copy readers)" in after


def test_no_async_proxy_no_fence():
    for func, arch in ((tile_copy(store={"disable_tma": True}), "sm_90a"), (tile_copy(), "sm_80")):
        before, after = _before_after(func, arch)
        assert after == before and _barriers(after) == ["T.sync_threads()  # inserted: S"]


def test_the_fence_is_printed_before_the_barrier():
    import tilelang
    src = tilelang.lower(tile_copy(), target={"kind": "cuda", "arch": "sm_90a"}).kernel_source
    lines = [ln.strip() for ln in src.splitlines()]
    k = lines.index("__syncthreads();")
    assert lines[k - 1] == "tl::fence_proxy_async();"


def staged_add(reduce_first=False):
    """Tiles of A and B through shared memory, their sum stored through a shared tile (a TMA
    store): the barrier after the A / B copies orders no tile the async proxy reads.
    `reduce_first`: a row reduction (a tile op) between the copies and that barrier."""
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((256, 256), "float32"), B: T.Tensor((256, 256), "float32"),
             C: T.Tensor((256, 256), "float32"), R: T.Tensor((256,), "float32")):
        with T.Kernel(8, 8, threads=128) as (bx, by):
            As = T.alloc_shared((32, 32), "float32")
            Bs = T.alloc_shared((32, 32), "float32")
            c = T.alloc_fragment((32, 32), "float32")
            Cs = T.alloc_shared((32, 32), "float32")
            T.copy(A[by * 32, bx * 32], As)
            T.copy(B[by * 32, bx * 32], Bs)
            if reduce_first:
                r = T.alloc_fragment((32,), "float32")
                T.reduce_sum(As, r, dim=1)
                T.copy(r, R[by * 32])
            for i, j in T.Parallel(32, 32):
                c[i, j] = As[i, j] + Bs[i, j]
            T.copy(c, Cs)
            T.copy(Cs, C[by * 32, bx * 32])
    return main


def test_a_barrier_ordering_no_stored_tile_is_not_fenced(monkeypatch):
    _, after = _before_after(staged_add())
    assert _barriers(after) == ["T.sync_threads()  # inserted: As, Bs",
                                "T.sync_threads()  # inserted, after a fence.proxy.async: Cs"]
    assert "but the inserted barriers not marked" in after
    monkeypatch.setenv("TILELANG_CUDA_SELECTIVE_PROXY_FENCES", "0")   # every barrier fenced, as before
    _, after = _before_after(staged_add())
    assert all("after a fence.proxy.async" in b for b in _barriers(after)), _barriers(after)


def test_a_tile_op_before_the_barrier_keeps_the_fence():
    # the barrier after the copies: unfenced; the one after the reduction (a tile op, whose
    # shared scratch this pass does not look into): fenced
    _, after = _before_after(staged_add(reduce_first=True))
    assert _barriers(after) == ["T.sync_threads()  # inserted: As",
                                "T.sync_threads()  # inserted, after a fence.proxy.async: r",
                                "T.sync_threads()  # inserted, after a fence.proxy.async: Cs"]


def staged_atomics(write_operand=False):
    """A wgmma gemm, then its accumulator staged through two shared tiles and added to D
    with atomics, twice in a loop (the published sparse MLA backward's dKV update): the
    barriers between the staging and the atomics order no tile wgmma reads. `write_operand`:
    the second staging nest also writes Bs (wgmma's B operand)."""
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), D: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            Ss = T.alloc_shared((32, 64), "float32")
            Ts = T.alloc_shared((32, 64), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, c, clear_accum=True)
            for s in T.serial(2):
                for i, j in T.Parallel(64, 64):
                    if i < 32:
                        Ss[i, j] = c[i + s * 32, j]
                for i, j in T.Parallel(64, 64):
                    if i < 32:
                        Ts[i, j] = c[i + s * 32, j] * 2.0
                    if write_operand:
                        Bs[i, j] = T.cast(c[i, j], "float16")
                for i, j in T.Parallel(32, 64):
                    T.atomic_add(D[i + s * 32, j], Ss[i, j])
                for i, j in T.Parallel(32, 64):
                    T.atomic_add(D[i + s * 32, j], Ts[i, j])
    return main


def test_barriers_in_a_loop_body_that_order_no_wgmma_operand_are_not_fenced(monkeypatch):
    before, after = _before_after(staged_atomics())
    assert "wgmma" in before
    assert _barriers(after) == ["T.sync_threads()  # inserted, after a fence.proxy.async: As, Bs",
                                # the first of the loop body: the gemm (first iteration) or the
                                # previous iteration's atomics precede it, neither writes As or Bs
                                "T.sync_threads()  # inserted: Ss",
                                # before the atomics (Ss and Ts staged); the two atomic nests on D
                                # need none between them (additions, in any order)
                                "T.sync_threads()  # inserted: Ss"]
    monkeypatch.setenv("TILELANG_CUDA_GEMM_SELECTIVE_FENCES", "0")   # every barrier fenced, as before
    _, after = _before_after(staged_atomics())
    assert all("after a fence.proxy.async" in b for b in _barriers(after)) and len(_barriers(after)) == 3


def test_a_nest_writing_a_wgmma_operand_keeps_the_fence():
    _, after = _before_after(staged_atomics(write_operand=True))
    fenced = ["after a fence.proxy.async" in b for b in _barriers(after)]
    # the loop body's second barrier follows the nest that writes Bs
    assert fenced == [True, False, True], _barriers(after)


def test_the_first_barrier_of_a_loop_body_sees_what_ran_before_the_loop(monkeypatch):
    """A nest writing Bs (wgmma's B) right before a loop: in the first iteration that write
    precedes the loop body's first barrier, which therefore fences there (only there: the
    later iterations' own statements write no operand); the one after the accumulator's
    staging does not."""
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), D: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            Ss = T.alloc_shared((64, 64), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, c, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                Bs[i, j] = T.cast(c[i, j], "float16")
            for s in T.serial(2):
                T.copy(c, Ss)
                for i, j in T.Parallel(64, 64):
                    T.atomic_add(D[i, j], Ss[i, j])
                T.gemm(As, Bs, c, clear_accum=True)
    def in_loop():
        _, after = _before_after(main)
        lines = [ln.strip() for ln in after.splitlines()]
        return _barriers("\n".join(lines[lines.index("for s in T.serial(2):"):]))
    assert in_loop() == ["T.sync_threads()  # inserted, after a fence.proxy.async when s == 0: Ss",
                         "T.sync_threads()  # inserted: Ss"]
    import tilelang
    src = tilelang.lower(main, target={"kind": "cuda", "arch": "sm_90a"}).kernel_source
    assert "if ((s == 0)) tl::fence_proxy_async();" in src
    monkeypatch.setenv("TILELANG_CUDA_FENCE_FIRST_ITERATION", "0")   # every iteration
    assert in_loop() == ["T.sync_threads()  # inserted, after a fence.proxy.async: Ss",
                         "T.sync_threads()  # inserted: Ss"]


def gathered_producer(wait_group=False):
    """D = sum over 4 rounds of A @ B[rows]^T: a producer warpgroup gathers 64 rows of B a round
    into wgmma's B tile with T.ptx_cp_async (16 rows a step, a flag per row staged in shared
    memory and read back, as the published sparse MLA forward's producer), completing on an
    mbarrier (T.cp_async_barrier_noinc); `wait_group`: the producer also waits for its copies
    (T.cp_async_wait) before arriving."""
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((512, 64), "float16"), Idx: T.Tensor((256,), "int32"),
             D: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            flags = T.alloc_shared((64,), "int32")
            c = T.alloc_fragment((64, 64), "float32")
            idx = T.alloc_var("int32")
            ready = T.alloc_barrier(128)
            free = T.alloc_barrier(128)
            if tx < 128:
                T.copy(A, As)
                T.clear(c)
                for it in T.serial(4):
                    T.barrier_wait(ready, it & 1)
                    T.gemm(As, Bs, c, transpose_B=True)
                    T.barrier_arrive(free)
                T.copy(c, D)
            else:
                for it in T.serial(4):
                    T.barrier_wait(free, (it & 1) ^ 1)
                    for r in T.serial(4):
                        idx = Idx[it * 64 + r * 16 + (tx - 128) // 8]
                        flags[r * 16 + (tx - 128) // 8] = idx
                        if flags[r * 16 + (tx - 128) // 8] >= 0:
                            T.ptx_cp_async(T.access_ptr(Bs[r * 16 + (tx - 128) // 8, (tx - 128) % 8 * 8], "w", 8),
                                           T.access_ptr(B[idx, (tx - 128) % 8 * 8], "r", 8), 8)
                    if wait_group:
                        T.ptx_commit_group()
                        T.ptx_wait_group(0)
                    T.cp_async_barrier_noinc(ready)
    return main


def test_cp_async_landing_on_an_mbarrier_is_no_write_the_producers_barriers_fence(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_UNFENCED_MBARRIER_CP_ASYNC", "1")   # opt-in
    monkeypatch.setenv("TILELANG_CUDA_ITERATION_DISJOINT", "1")   # one barrier a round (plan/sync.py)
    # the copies complete after the issuing threads' barriers; their reader fences after its wait
    # (the round's barrier between a flag's write and its read; the one hoisted out of the rounds
    # orders the previous tile's flag reads, fenced in the first tile only: what ran before the
    # producer's loop is not followed into the branch)
    _, after = _before_after(gathered_producer())
    assert [b for b in _barriers(after) if "flags" in b] == [
        "T.sync_threads()  # inserted, after a fence.proxy.async when it_1 == 0: flags (hoisted out of the loop)",
        "T.sync_threads()  # inserted: flags"], _barriers(after)
    # copies the producer waits for itself are its generic writes of wgmma's B tile: fenced
    _, after = _before_after(gathered_producer(wait_group=True))
    assert [b for b in _barriers(after) if "flags" in b] == [
        "T.sync_threads()  # inserted, after a fence.proxy.async: flags (hoisted out of the loop)",
        "T.sync_threads()  # inserted, after a fence.proxy.async: flags"], _barriers(after)
    # the switch off (the default): the mbarrier's copies fence as the waited ones do
    monkeypatch.setenv("TILELANG_CUDA_UNFENCED_MBARRIER_CP_ASYNC", "0")
    _, after = _before_after(gathered_producer())
    assert all("fence" in b for b in _barriers(after) if "flags" in b), _barriers(after)


@pytest.mark.gpu
def test_gathered_producer_on_the_gpu():
    import torch
    import tilelang
    a = torch.randn(64, 64, dtype=torch.float16, device="cuda")
    b = torch.randn(512, 64, dtype=torch.float16, device="cuda")
    idx = torch.randperm(512, device="cuda")[:256].int()
    d = torch.empty(64, 64, device="cuda")
    kernel = tilelang.compile(gathered_producer(), target="cuda")
    for _ in range(5):
        kernel(a, b, idx, d)
        ref = sum(a.float() @ b.float()[idx[it * 64:(it + 1) * 64].long()].T for it in range(4))
        torch.testing.assert_close(d, ref, rtol=1e-2, atol=1e-2)
