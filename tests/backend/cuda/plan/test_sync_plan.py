"""Barrier planning (plan/sync.py): what gets a __syncthreads and what does not."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.helpers import build


def per_thread_copy(N=128, M=128):
    @T.prim_func
    def k(A: T.Tensor((N, M), "float32"), B: T.Tensor((N, M), "float32")):
        with T.Kernel(M // 128, threads=128) as bx:
            tx = T.get_thread_binding(0)
            for row in T.serial(N):
                B[row, bx * 128 + tx] = A[row, bx * 128 + tx]
    return k


def per_thread_write_then_tile_read(N=128):
    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=N):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((N,), "float32")
            B[tx] = A[tx] * 2.0
            T.copy(B, s)          # every thread reads elements other threads wrote
            for i in T.Parallel(N):
                A[i] = s[N - 1 - i]
    return k


def test_per_thread_code_on_global_memory_gets_no_barrier():
    src = build(per_thread_copy()).source
    assert "__syncthreads" not in src


def test_tile_op_after_per_thread_global_writes_keeps_its_barrier():
    src = build(per_thread_write_then_tile_read()).source
    assert src.count("__syncthreads()") >= 1


def test_both_run_on_the_cpu_reference():
    a = np.random.rand(128, 128).astype("float32")
    b = np.zeros_like(a)
    tilelang.compile(per_thread_copy(), target="cpu")(a, b)
    np.testing.assert_array_equal(a, b)
    a1 = np.arange(128, dtype="float32")
    b1 = np.zeros(128, "float32")
    tilelang.compile(per_thread_write_then_tile_read(), target="cpu")(a1, b1)
    np.testing.assert_array_equal(b1, np.arange(128) * 2.0)
    np.testing.assert_array_equal(a1, (np.arange(128) * 2.0)[::-1])


def row_sums_in_shared(shift=False, R=32, C=64):
    """A (R, 4) shared partial sum that a T.Parallel nest accumulates in a serial loop; with
    `shift` each element adds its neighbour row's previous partial, which another thread
    wrote (through a second buffer, so that no nest reads what it writes)."""
    @T.prim_func
    def k(A: T.Tensor((R, C), "float32"), B: T.Tensor((R, 4), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_shared((R, C), "float32")
            part = T.alloc_shared((R, 4), "float32")
            prev = T.alloc_shared((R, 4), "float32")
            T.copy(A, x)
            T.clear(part)
            T.clear(prev)
            for q in T.serial(C // 4):
                if shift:
                    for i, j in T.Parallel(R, 4):
                        part[i, j] = prev[(i + 1) % R, j] * 0.5 + x[i, q * 4 + j]
                    for i, j in T.Parallel(R, 4):
                        prev[i, j] = part[i, j]
                else:
                    for i, j in T.Parallel(R, 4):
                        part[i, j] += x[i, q * 4 + j] * x[i, q * 4 + j]
            T.copy(part, B)
    return k


def _loop_body(src, var="q"):
    start = src.index(f"for (int {var} = 0;")
    depth, i = 0, src.index("{", start)
    for j in range(i, len(src)):
        depth += {"{": 1, "}": -1}.get(src[j], 0)
        if depth == 0:
            return src[start:j + 1], src[:start]
    raise AssertionError("unbalanced")


def test_nest_owning_its_elements_needs_no_barrier_per_iteration():
    body, before = _loop_body(build(row_sums_in_shared()).source)
    assert "__syncthreads" not in body
    # what the loop reads from the copy before it is ordered once, before the loop
    assert before.rstrip().endswith("__syncthreads();")


def test_nest_reading_other_threads_elements_keeps_its_barrier():
    body, _ = _loop_body(build(row_sums_in_shared(shift=True)).source)
    assert "__syncthreads" in body


def test_nest_whose_extent_changes_keeps_its_barrier():
    # the split of (i, j) over the threads follows the extent, which grows with q
    @T.prim_func
    def k(A: T.Tensor((32, 4), "float32"), B: T.Tensor((32, 4), "float32")):
        with T.Kernel(1, threads=64):
            part = T.alloc_shared((32, 4), "float32")
            T.clear(part)
            for q in T.serial(4):
                for i, j in T.Parallel(32, q + 1):
                    part[i, j] += A[i, j]
            T.copy(part, B)
    body, _ = _loop_body(build(k).source)
    assert "__syncthreads" in body


def test_private_accumulation_matches_on_the_cpu():
    a = np.random.default_rng(0).standard_normal((32, 64)).astype("float32")
    b = np.zeros((32, 4), "float32")
    tilelang.compile(row_sums_in_shared(), target="cpu")(a, b)
    np.testing.assert_allclose(b, (a.reshape(32, 16, 4) ** 2).sum(1), rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("shift", [False, True])
def test_gpu_shared_accumulation_in_a_serial_loop(shift):
    import torch
    a = torch.randn(32, 64, device="cuda")
    b = torch.zeros(32, 4, device="cuda")
    tilelang.compile(row_sums_in_shared(shift), target="cuda")(a, b)
    ref = np.zeros((32, 4), "float32")
    tilelang.compile(row_sums_in_shared(shift), target="cpu")(a.cpu().numpy(), ref)
    np.testing.assert_allclose(b.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
