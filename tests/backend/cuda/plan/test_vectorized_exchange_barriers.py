"""A T.vectorized loop is one vector access a thread: plan/sync.py treats it as one unit, so
its barrier goes before it. Found wrong on the H200 with the published
`hadamard_transform/example_hadamard.py` (a large share of the output off): rows exchanged
through shared memory round by round (`shared[tx, j] = ...` then `... = shared[perm(tx), j]`,
both `T.vectorized`) lost the barrier between one round's reads and the next round's writes.
The planner had put it between the lanes of the write loop (a conflict of the loop with its
own next lane), where no barrier can go (`_insert` skips vectorized bodies), and counted on it."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.plan.sync import insert_barriers
from tests.backend.cuda.plan.around import around


def exchange(vectorized=True, rounds=4):
    loop = T.vectorized if vectorized else T.serial

    @T.prim_func
    def k(A: T.Tensor((256, 128), "float32"), B: T.Tensor((256, 128), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding(0)
            local = T.alloc_local((128,), "float32")
            shared = T.alloc_shared((256, 32), "float32")
            for i in T.serial(128):
                local[i] = A[tx, i]
            for r in T.serial(rounds):
                for j in loop(32):
                    shared[tx, j] = local[r * 32 + j]
                for j in loop(32):   # the row of thread (tx % 8) * 32 + tx // 8: a transpose
                    local[r * 32 + j] = shared[tx % 8 * 32 + tx // 8, j]
            for i in T.serial(128):
                B[tx, i] = local[i]
    return k


def _round_body(text):
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(("for ", "T.sync_threads"))]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("for r in"))
    return lines[start + 1:start + 5]


def test_each_round_waits_before_its_writes_and_before_its_reads():
    _, after = around(exchange(), insert_barriers)
    body = _round_body(after)
    assert body[0].startswith("T.sync_threads()  # inserted: shared"), body   # the last round's readers
    assert body[1].startswith("for j in T.vectorized(32)"), body
    assert body[2].startswith("T.sync_threads()  # inserted: shared"), body   # this round's writers
    assert body[3].startswith("for j_1 in T.vectorized(32)"), body


@pytest.mark.gpu
@pytest.mark.parametrize("vectorized", [True, False])
def test_the_exchange_is_a_transpose_of_each_round_on_the_gpu(vectorized):
    torch = pytest.importorskip("torch")
    kernel = tilelang.compile(exchange(vectorized), target="cuda")
    a = torch.randn(256, 128, device="cuda")
    b = torch.empty_like(a)
    for _ in range(20):   # a race shows only some of the time
        kernel(a, b)
        src = np.arange(256) % 8 * 32 + np.arange(256) // 8
        ref = a.cpu().numpy().reshape(256, 4, 32)[src].reshape(256, 128)
        np.testing.assert_array_equal(b.cpu().numpy(), ref)
