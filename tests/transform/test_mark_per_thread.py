"""Block-level statements that name a thread index run on every thread, whatever simplifying
their indices leaves (transform/mark_per_thread.py), on both backends. Found by the fuzzer's
Staging family on the H200: `T.atomic_add(H[(f(tx) * 0 + 3) % 64], 1)` became `H[3]` in
lower_tile_ops and then ran on thread 0 only (2 counts where every thread's make 256); the CPU
backend counted 256 there, but 2 in a kernel where no other statement names the thread."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.transform.mark_per_thread import mark_per_thread
from tests.backend.cuda.helpers import build


def counts(names_thread=True):
    """Every thread adds 1 to H[3] twice (`names_thread`), or the block adds 1 twice (no thread
    index in the statement: once a block)."""
    @T.prim_func
    def k(O: T.Tensor((1, 8), "int32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            H = T.alloc_shared((8,), "int32")
            T.fill(H, 0)
            for r in T.serial(2):
                if names_thread:
                    T.atomic_add(H[((r * 128 + tx) * 0 + 3) % 8], 1)
                else:
                    T.atomic_add(H[3], 1)
            for i in T.Parallel(8):
                O[bx, i] = H[i]
    return k


def _atomic_line(src):
    return next(ln.strip() for ln in src.splitlines() if "AtomicAdd(&H[3]" in ln)


def test_a_statement_written_per_thread_stays_per_thread_after_its_index_is_simplified():
    assert _atomic_line(build(counts(), "sm_90a").source) == "AtomicAdd(&H[3], (int)(1));"
    # one that names no thread runs once a block, on thread 0 (README: block-level statements)
    assert _atomic_line(build(counts(False), "sm_90a").source) == "if (tl_tid == 0) { AtomicAdd(&H[3], (int)(1)); }"


def test_the_cpu_backend_counts_alike():
    for names_thread, want in ((True, 256), (False, 2)):
        o = np.zeros((1, 8), np.int32)
        tilelang.compile(counts(names_thread), target="cpu")(o)
        assert o[0, 3] == want


def test_the_pass_marks_only_statements_that_name_a_thread_index():
    from tilelang.ir.visitor import walk
    from tilelang.ir import tile_ops as TO
    for names_thread in (True, False):
        f = mark_per_thread(counts(names_thread))
        marked = []
        walk(f.body, lambda n: marked.append(bool(n.annotations.get(TO.PER_THREAD))) if isinstance(n, TO.Atomic) else None)
        assert marked == [names_thread]


@pytest.mark.gpu
def test_counts_match_the_cpu_backend_on_the_gpu():
    torch = pytest.importorskip("torch")
    for names_thread, want in ((True, 256), (False, 2)):
        ref = np.zeros((1, 8), np.int32)
        tilelang.compile(counts(names_thread), target="cpu")(ref)
        o = torch.zeros(1, 8, dtype=torch.int32, device="cuda")
        tilelang.compile(counts(names_thread), target="cuda")(o)
        assert ref[0, 3] == want and o.cpu().numpy()[0, 3] == want
