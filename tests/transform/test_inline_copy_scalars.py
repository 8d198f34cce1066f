"""inline_copy_scalars: in a T.Pipelined body that computes where its tile lives (a paged KV
cache: `kv_start = table[b, k] * page`, held in a scalar stored every iteration), the copy
nest reads the scalar's defining expression instead, so the pipeline planner issues it
iterations ahead (CUDA: on the TMA ring; before, the copy ran synchronously). Other readers
keep the scalar; results are unchanged (CPU backend against numpy)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk

PAGE, D, PAGES, B, PER_SEQ = 32, 64, 16, 2, 4


def paged_sum(stages=2, table_written=False):
    """Out[b, :] = the column sums of sequence b's pages, visited last to first through its
    block table (the published paged MLA decode's indexing); `Pos[b, kr]` records the start
    row each iteration read (a reader of the scalar that is not a copy)."""
    @T.prim_func
    def k(KV: T.Tensor((PAGES * PAGE, D), "float16"), table: T.Tensor((B, PER_SEQ), "int32"),
          lens: T.Tensor((B,), "int32"), Out: T.Tensor((B, D), "float32"), Pos: T.Tensor((B, PER_SEQ), "int32")):
        with T.Kernel(B, threads=128) as bx:
            s = T.alloc_shared((PAGE, D), "float16")
            acc = T.alloc_fragment((PAGE, D), "float32")
            out = T.alloc_fragment((D,), "float32")
            T.clear(acc)
            loop_range = T.ceildiv(lens[bx], PAGE)
            for kr in T.Pipelined(loop_range, num_stages=stages):
                k = loop_range - 1 - kr
                kv_start = table[bx, k] * PAGE
                T.copy(KV[kv_start:kv_start + PAGE, :], s)
                for i, j in T.Parallel(PAGE, D):
                    acc[i, j] += s[i, j]
                Pos[bx, kr] = kv_start
                if table_written:
                    table[bx, k] = 0
            T.reduce_sum(acc, out, dim=0)
            T.copy(out, Out[bx, :])
    return k


def _copy_nest_loads(func):
    """Names of the buffers the shared-memory copy nest of the pipelined loop reads."""
    from tilelang.transform.pass_manager import PassContext, run_passes
    from tilelang.backend.cuda import pipeline as P
    from tilelang.backend.registry import parse_target
    from tilelang.transform.inline_copy_scalars import inline_copy_scalars
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": "sm_90a"})
    k = P.PASSES.index(inline_copy_scalars)
    before = run_passes(func, P.PASSES[:k], ctx)
    after = inline_copy_scalars(before, ctx)

    def loads(f):
        out = set()
        for loop in [n for n in _all(f.body) if isinstance(n, S.For) and n.kind == S.PIPELINED]:
            for st in loop.body.stmts:
                if isinstance(st, S.For) and st.kind == S.PARALLEL:
                    stores = [n.buffer.scope for n in _all(st) if isinstance(n, S.BufferStore)]
                    if stores and all(x.startswith("shared") for x in stores):
                        out |= {n.buffer.name for n in _all(st) if isinstance(n, E.BufferLoad)}
        return out
    return loads(before), loads(after), after


def _all(node):
    out = []
    walk(node, out.append)
    return out


def test_the_copy_reads_the_table_not_the_scalar():
    before, after, func = _copy_nest_loads(paged_sum())
    assert "kv_start" in before and "kv_start" not in after and {"table", "KV"} <= after
    # the other reader (the store into Pos) still reads the scalar
    stores = [n for n in _all(func.body) if isinstance(n, S.BufferStore) and n.buffer.name == "Pos"]
    assert any(isinstance(n, E.BufferLoad) and n.buffer.name == "kv_start" for n in _all(stores[0].value))


def test_a_table_the_kernel_writes_is_left_alone():
    before, after, _ = _copy_nest_loads(paged_sum(table_written=True))
    assert "kv_start" in after


@pytest.mark.parametrize("stages", [2, 1])
def test_results_are_unchanged_on_the_cpu(stages):
    rng = np.random.default_rng(0)
    kv = rng.standard_normal((PAGES * PAGE, D)).astype(np.float16)
    table = np.stack([rng.permutation(PAGES)[:PER_SEQ] for _ in range(B)]).astype(np.int32)
    lens = np.array([PER_SEQ * PAGE, 3 * PAGE - 5], dtype=np.int32)
    out = np.zeros((B, D), np.float32)
    pos = np.full((B, PER_SEQ), -1, np.int32)
    kern = tilelang.compile(paged_sum(stages), target="cpu")
    kern(kv, table, lens, out, pos)
    for b in range(B):
        n = -(-lens[b] // PAGE)
        rows = np.concatenate([kv[table[b, k] * PAGE:(table[b, k] + 1) * PAGE] for k in range(n)])
        np.testing.assert_allclose(out[b], rows.astype(np.float32).sum(0), rtol=1e-4, atol=1e-3)
        assert list(pos[b, :n]) == [table[b, n - 1 - kr] * PAGE for kr in range(n)]


def test_cuda_issues_the_paged_copy_two_iterations_ahead():
    """(The published paged MLA decode's KV and K_pe copies go on the TMA ring this way.)"""
    src = tilelang.compile(paged_sum(), target="cuda -arch=sm_90a").get_kernel_source()
    loop = src[src.index("for (int kr_1 = "):]
    assert "tl::cp_async_wait<1>();" in loop and "const int kr_next = (kr_1 + 2);" in loop
    ahead = loop[loop.index("const int kr_next = (kr_1 + 2);"):]
    assert "table[" in ahead and "cp_async" in ahead


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 3])
def test_paged_copies_issued_ahead_match_torch_gpu(stages):
    import torch
    torch.manual_seed(0)
    kv = torch.randn(PAGES * PAGE, D, device="cuda", dtype=torch.float16)
    table = torch.stack([torch.randperm(PAGES)[:PER_SEQ] for _ in range(B)]).int().cuda()
    lens = torch.tensor([PER_SEQ * PAGE, 3 * PAGE - 5], device="cuda", dtype=torch.int32)
    out = torch.zeros(B, D, device="cuda")
    pos = torch.full((B, PER_SEQ), -1, device="cuda", dtype=torch.int32)
    kern = tilelang.compile(paged_sum(stages), target="cuda")
    kern(kv, table, lens, out, pos)
    for b in range(B):
        n = -(-int(lens[b]) // PAGE)
        rows = torch.cat([kv[int(table[b, k]) * PAGE:(int(table[b, k]) + 1) * PAGE] for k in range(n)])
        torch.testing.assert_close(out[b], rows.float().sum(0), rtol=1e-3, atol=1e-2)
        assert pos[b, :n].tolist() == [int(table[b, n - 1 - kr]) * PAGE for kr in range(n)]
