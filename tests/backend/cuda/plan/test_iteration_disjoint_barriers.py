"""The barrier planner and serial loops whose iterations touch a shared buffer at different
elements (analysis/iteration_disjoint.py): the published sparse MLA forward's producer writes
`is_kv_valid[stage, r * 16 + (tx - 256) // 8]` and reads it back after a barrier in each of 4
rounds r; a second barrier before each round's write (ordering it after the previous round's
reads of other elements) goes away under TILELANG_CUDA_ITERATION_DISJOINT=1 (opt-in: that kernel
ran slower with it on the H200). Where rounds do meet (`r * 8` with 16 elements a round) the
barrier stays."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.plan.sync import insert_barriers
from tests.backend.cuda.plan.around import around


def valid_rounds(stride=16, rounds=4):
    """Each round: 8 threads a flag decide whether their row's 8 values are copied; the flags
    are written, a barrier, and read back by the same threads."""
    @T.prim_func
    def k(Idx: T.Tensor((2 * 64,), "int32"), X: T.Tensor((2 * 64, 8), "float32"),
          Y: T.Tensor((2 * 64, 8), "float32"), lim: T.int32):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            flags = T.alloc_shared((2 * 64 + 64,), "int32")
            idx = T.alloc_var("int32")
            for stage in T.serial(2):
                for r in T.serial(rounds):
                    idx = Idx[stage * 64 + r * 16 + tx // 8]
                    flags[stage * 64 + r * stride + tx // 8] = T.if_then_else(idx <= lim, 1, 0)
                    T.sync_threads()
                    if flags[stage * 64 + r * stride + tx // 8] == 1:
                        Y[stage * 64 + r * 16 + tx // 8, tx % 8] = X[stage * 64 + r * 16 + tx // 8, tx % 8]
    return k


def _inserted(text):
    return [ln.strip() for ln in text.splitlines() if "# inserted" in ln]


@pytest.fixture
def disjoint(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_ITERATION_DISJOINT", "1")


def test_rounds_at_different_elements_need_no_barrier_before_the_write(disjoint):
    _, after = around(valid_rounds(), insert_barriers)
    # only the user's barrier between a round's write and its read
    lines = [ln.strip() for ln in after.splitlines()]
    r = next(n for n, ln in enumerate(lines) if ln.startswith("for r in"))
    assert not any("# inserted" in ln for ln in lines[r:r + 8]), after


def test_the_switch_off_keeps_the_barrier(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_ITERATION_DISJOINT", "0")
    _, after = around(valid_rounds(), insert_barriers)
    lines = [ln.strip() for ln in after.splitlines()]
    r = next(n for n, ln in enumerate(lines) if ln.startswith("for r in"))
    assert any("# inserted: flags" in ln for ln in lines[r:r + 8]), after


def test_rounds_that_meet_keep_their_barrier(disjoint):
    # a stride of 8 with 16 flags a round: round r + 1 writes flags round r read
    _, after = around(valid_rounds(stride=8), insert_barriers)
    lines = [ln.strip() for ln in after.splitlines()]
    r = next(n for n, ln in enumerate(lines) if ln.startswith("for r in"))
    assert any("# inserted: flags" in ln for ln in lines[r:r + 8]), after


def test_analysis_reads_the_loop_digit():
    from tilelang.backend.cuda.analysis.iteration_disjoint import disjoint_across_iterations
    from tilelang.ir import expr as E
    from tilelang.ir import stmt as S
    tx, r, stage = (E.Var(n, "int32") for n in ("tx", "r", "stage"))
    from tilelang.ir.buffer import Buffer
    buf = Buffer("flags", [E.IntImm(192, "int32")], "int32", scope="shared")

    def loop(stride, var=r, ext=4):
        idx = stage * 64 + var * stride + tx // 8
        return S.For(var, E.IntImm(0, "int32"), E.IntImm(ext, "int32"), S.SERIAL,
                     S.BufferStore(buf, E.IntImm(1, "int32"), [idx]))
    threads = {id(tx): (0, 128)}
    assert disjoint_across_iterations(loop(16), {id(buf): buf}, threads, set()) == {id(buf)}
    assert disjoint_across_iterations(loop(8), {id(buf): buf}, threads, set()) == set()
    # over 64 threads: 8 flags a round, so a stride of 8 keeps rounds apart
    assert disjoint_across_iterations(loop(8), {id(buf): buf}, {id(tx): (0, 64)}, set()) == {id(buf)}


@pytest.mark.gpu
@pytest.mark.parametrize("stride", [16, 8])
def test_rounds_on_the_gpu(stride, disjoint):
    torch = pytest.importorskip("torch")
    idx = torch.randint(0, 100, (128,), dtype=torch.int32, device="cuda")
    x = torch.randn(128, 8, device="cuda")
    kernel = tilelang.compile(valid_rounds(stride=stride), target="cuda")
    for _ in range(5):
        y = torch.zeros(128, 8, device="cuda")
        kernel(idx, x, y, 50)
        ref = torch.where((idx <= 50)[:, None], x, torch.zeros_like(x))
        np.testing.assert_array_equal(y.cpu().numpy(), ref.cpu().numpy())
