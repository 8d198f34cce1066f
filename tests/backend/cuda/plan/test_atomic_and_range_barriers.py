"""Two rules of the barrier planner (plan/sync.py) seen in the published DeepSeek V3.2
`topk_selector.py` (0.88 of the published package): per-thread atomics of one kind on a shared
histogram need no barrier between them (it had a `__syncthreads()` before every one of them), and
the user's `T.sync_threads(3, 256)` under `if tx < 256` orders those 256 threads (the planner had
added its own named barrier beside each)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.plan.sync import insert_barriers
from tests.backend.cuda.plan.around import around


def histogram(plain=False):
    """Counts of x // 16 (values 0..4095) in 256 bins, 4 values a thread a round; `plain`: the
    count updated by a load and a store instead of an atomic (a race: only the plan is read)."""
    @T.prim_func
    def k(X: T.Tensor((8192,), "int32"), H: T.Tensor((256,), "int32")):
        with T.Kernel(1, threads=512):
            tx = T.get_thread_binding()
            hist = T.alloc_shared((256,), "int32")
            T.fill(hist, 0)
            for s in T.serial(4):
                for j in T.serial(4):
                    v = X[s * 2048 + tx * 4 + j] // 16
                    if plain:
                        hist[v] = hist[v] + 1
                    else:
                        T.atomic_add(hist[v], 1)
            T.copy(hist, H)
    return k


def suffix_sums(count=256):
    """Suffix sums of 256 values by doubling steps on the first 256 of 512 threads, ordered by
    the user's named barrier of `count` threads."""
    @T.prim_func
    def k(X: T.Tensor((256,), "int32"), Y: T.Tensor((256,), "int32")):
        with T.Kernel(1, threads=512):
            tx = T.get_thread_binding()
            s = T.alloc_shared((257,), "int32")
            val = T.alloc_var("int32")
            if tx < 256:
                s[tx] = X[tx]
                if tx == 0:
                    s[256] = 0
                for i in T.serial(8):
                    T.sync_threads(3, count)
                    if tx < 256 - (1 << i):
                        val = s[tx] + s[tx + (1 << i)]
                    T.sync_threads(3, count)
                    if tx < 256 - (1 << i):
                        s[tx] = val
                T.sync_threads(3, count)
                Y[tx] = s[tx]
    return k


def _loop_lines(text, head):
    lines = [ln.strip() for ln in text.splitlines()]
    start = next(n for n, ln in enumerate(lines) if ln.startswith(head))
    return lines[start:start + 8]


def test_atomics_of_one_kind_need_no_barrier_between_rounds():
    _, after = around(histogram(), insert_barriers)
    assert not any(ln.startswith("T.sync_threads()") for ln in _loop_lines(after, "for s in")[1:5]), after
    _, after = around(histogram(plain=True), insert_barriers)
    assert any(ln.startswith("T.sync_threads()  # inserted: hist") for ln in _loop_lines(after, "for s in")), after


def test_a_named_barrier_of_every_thread_of_the_branch_orders_them():
    _, after = around(suffix_sums(), insert_barriers)
    assert not any("# inserted" in ln for ln in _loop_lines(after, "for i in")), after
    _, after = around(suffix_sums(count=128), insert_barriers)   # not every thread of the branch
    assert any("# inserted: s" in ln for ln in _loop_lines(after, "for i in")), after


@pytest.mark.gpu
def test_histogram_and_suffix_sums_on_the_gpu():
    torch = pytest.importorskip("torch")
    x = torch.randint(0, 4096, (8192,), dtype=torch.int32, device="cuda")
    h = torch.empty(256, dtype=torch.int32, device="cuda")
    kernel = tilelang.compile(histogram(), target="cuda")
    for _ in range(10):
        kernel(x, h)
        np.testing.assert_array_equal(h.cpu().numpy(), np.bincount(x.cpu().numpy() // 16, minlength=256))
    v = torch.randint(0, 100, (256,), dtype=torch.int32, device="cuda")
    y = torch.empty(256, dtype=torch.int32, device="cuda")
    kernel = tilelang.compile(suffix_sums(), target="cuda")
    for _ in range(10):
        kernel(v, y)
        np.testing.assert_array_equal(y.cpu().numpy(), np.cumsum(v.cpu().numpy()[::-1])[::-1])
