"""plan/private_barriers.py (`drop_private_barriers`, TILELANG_CUDA_PRIVATE_BARRIERS=1): an
inserted barrier between nests that hand every element to one thread is dropped (the published
elementwise example: a tile loaded by 16-byte vectors and read back in a register tile of the
same mapping). A read of another thread's element (a transposed tile), a barrier inside a loop,
a statement the analysis does not model between the barriers, and the switch off keep it.
CPU: the IR before/after the pass; GPU: the kernels against torch with the pass on."""
import pytest

import tilelang.language as T
from tests.backend.cuda.plan.around import around, lines_with
from tilelang.backend.cuda.plan.private_barriers import drop_private_barriers


@pytest.fixture(autouse=True)
def _on(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_PRIVATE_BARRIERS", "1")


def elementwise(bm=32, bn=32, threads=128, in_dtype="float32", out_dtype="float32", transposed=False, size=256):
    """The published example_elementwise_add's kernel on size x size; `transposed`: C = A^T + B per tile."""
    M = N = size

    @T.prim_func
    def main(A: T.Tensor((M, N), in_dtype), B: T.Tensor((M, N), in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((bm, bn), in_dtype)
            B_shared = T.alloc_shared((bm, bn), in_dtype)
            C_local = T.alloc_fragment((bm, bn), out_dtype)
            C_shared = T.alloc_shared((bm, bn), out_dtype)
            T.copy(A[by * bm, bx * bn], A_shared)
            T.copy(B[by * bm, bx * bn], B_shared)
            for y, x in T.Parallel(bm, bn):
                if transposed:
                    C_local[y, x] = A_shared[x, y] + B_shared[y, x]
                else:
                    C_local[y, x] = A_shared[y, x] + B_shared[y, x]
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * bm, bx * bn])
    return main


def shared_chain():
    """A tile copied into shared memory, then on to a second shared tile element by element
    (the same vectors on the same threads), then out."""
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            S0 = T.alloc_shared((64, 64), "float16")
            S1 = T.alloc_shared((64, 64), "float16")
            T.copy(A, S0)
            T.copy(S0, S1)
            T.copy(S1, C)
    return main


def in_a_loop():
    """The elementwise tile in a loop over column blocks: the barrier orders one iteration's
    reads before the next one's writes too, which the pass does not model."""
    @T.prim_func
    def main(A: T.Tensor((32, 128), "float32"), C: T.Tensor((32, 128), "float32")):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared((32, 32), "float32")
            C_local = T.alloc_fragment((32, 32), "float32")
            for k in T.serial(4):
                T.copy(A[0, k * 32], A_shared)
                for y, x in T.Parallel(32, 32):
                    C_local[y, x] = A_shared[y, x] * 2.0
                T.copy(C_local, C[0, k * 32])
    return main


def with_a_reduction():
    """A row sum between the load and the use: a tile op the analysis does not model."""
    @T.prim_func
    def main(A: T.Tensor((32, 32), "float32"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared((32, 32), "float32")
            C_local = T.alloc_fragment((32, 32), "float32")
            s = T.alloc_fragment((32,), "float32")
            T.copy(A, A_shared)
            for y, x in T.Parallel(32, 32):
                C_local[y, x] = A_shared[y, x]
            T.reduce_sum(C_local, s, dim=1)
            for y, x in T.Parallel(32, 32):
                C_local[y, x] = A_shared[y, x] / s[y]
            T.copy(C_local, C)
    return main


def barriers(text):
    return lines_with(text, "T.sync_threads()  # inserted")


def test_the_elementwise_examples_barrier_goes():
    before, after = around(elementwise(), drop_private_barriers)
    assert barriers(before) == ["T.sync_threads()  # inserted: A_shared, B_shared",
                                "T.sync_threads()  # inserted, after a fence.proxy.async: C_shared"]
    # the TMA store's barrier stays: one thread's bulk copy reads what all of them wrote
    assert barriers(after) == ["T.sync_threads()  # inserted, after a fence.proxy.async: C_shared"]


def test_sixteen_bit_loads_into_a_float_tile_keep_the_mapping():
    # vector x8 copies of half and ThreadTile V=8 of the float tile (16 bytes of the narrowest type)
    before, after = around(elementwise(64, 64, 256, "float16", "float32"), drop_private_barriers)
    assert "T.sync_threads()  # inserted: A_shared, B_shared" in barriers(before)
    assert "T.sync_threads()  # inserted: A_shared, B_shared" not in barriers(after)


def test_a_transposed_read_keeps_the_barrier():
    before, after = around(elementwise(transposed=True), drop_private_barriers)
    assert before == after


def test_a_shared_to_shared_copy_on_the_same_vectors():
    before, after = around(shared_chain(), drop_private_barriers)
    assert lines_with(before, "inserted: S0") and not lines_with(after, "inserted: S0")


def test_barriers_in_loops_and_around_tile_ops_stay():
    for f in (in_a_loop(), with_a_reduction()):
        before, after = around(f, drop_private_barriers)
        assert barriers(before) and before == after


def test_switched_off_nothing_changes(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_PRIVATE_BARRIERS", "0")
    before, after = around(elementwise(), drop_private_barriers)
    assert before == after


@pytest.mark.gpu
@pytest.mark.parametrize("bm,bn,threads,in_dtype,out_dtype,transposed", [
    (32, 32, 128, "float32", "float32", False), (64, 64, 256, "float16", "float32", False),
    (32, 64, 128, "float16", "float16", False), (32, 32, 128, "float32", "float32", True)])
def test_elementwise_with_the_pass_matches_torch(bm, bn, threads, in_dtype, out_dtype, transposed):
    import torch
    import tilelang
    kern = tilelang.compile(elementwise(bm, bn, threads, in_dtype, out_dtype, transposed), target="cuda")
    dt = {"float32": torch.float32, "float16": torch.float16}
    torch.manual_seed(0)
    a = torch.randn(256, 256, device="cuda", dtype=dt[in_dtype])
    b = torch.randn(256, 256, device="cuda", dtype=dt[in_dtype])
    c = torch.empty(256, 256, device="cuda", dtype=dt[out_dtype])
    kern(a, b, c)
    ref = a.float()
    if transposed:   # each (square) tile of A transposed in place
        ref = ref.view(256 // bm, bm, 256 // bn, bn).transpose(1, 3).reshape(256, 256)
    torch.testing.assert_close(c.float(), ref + b.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
def test_shared_chain_with_the_pass_matches_torch():
    import torch
    import tilelang
    kern = tilelang.compile(shared_chain(), target="cuda")
    a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    c = torch.empty_like(a)
    kern(a, c)
    torch.testing.assert_close(c, a)
