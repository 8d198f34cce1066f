"""TVM-script spellings of a kernel that published TileLang code uses: `T.handle` parameters
given shapes by `T.match_buffer`, a launch by `T.thread_binding` loops instead of
T.Kernel, `T.launch_thread`, `T.parallel`, region stores `A[0, 4:8] = ...`, and T.unroll's
step / unroll_factor / explicit."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.ir import stmt as S
from tilelang.ir.errors import TileLangError
from tilelang.ir.visitor import walk


def _kernels(f):
    out = []
    walk(f.body, lambda n: out.append(n) if isinstance(n, S.KernelLaunch) else None)
    return out


def test_bound_loops_launch_a_kernel_with_matched_handle():
    @T.prim_func
    def main(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (8, 64), dtype=T.float32)
        B = T.match_buffer(B_ptr, (8, 64), dtype=T.float32)
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                B[bx, tx] = A[bx, tx] * 2.0 + tx

    (launch,) = _kernels(main)
    assert [int(g.value) for g in launch.grid] == [8] and list(launch.threads) == [64]
    assert [list(p.shape) for p in main.params] == [[8, 64], [8, 64]]
    kern = tilelang.compile(main, target="cpu")
    a = torch.randn(8, 64)
    b = torch.empty_like(a)
    kern(a, b)
    torch.testing.assert_close(b, a * 2 + torch.arange(64, dtype=torch.float32))


def test_bound_loops_must_start_with_block_x():
    with pytest.raises(TileLangError, match="blockIdx.x"):
        @T.prim_func
        def main(A: T.Tensor((64,), T.float32)):
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                A[tx] = 1.0


def test_match_buffer_needs_a_handle():
    with pytest.raises(TileLangError, match="T.handle"):
        @T.prim_func
        def main(A: T.Tensor((64,), T.float32)):
            B = T.match_buffer(A, (64,), T.float32)  # noqa: F841


def test_launch_thread_returns_the_kernel_axis():
    @T.prim_func
    def main(A: T.Tensor((4, 32), T.int32)):
        with T.Kernel(4, threads=32) as bx:
            tx = T.launch_thread("threadIdx.x", 32)
            for i in T.parallel(1):
                A[bx, tx + i] = tx * 10 + bx

    a = torch.zeros(4, 32, dtype=torch.int32)
    tilelang.compile(main, target="cpu")(a)
    ref = torch.arange(32, dtype=torch.int32)[None, :] * 10 + torch.arange(4, dtype=torch.int32)[:, None]
    assert torch.equal(a, ref)


def test_launch_thread_extent_must_match():
    with pytest.raises(TileLangError, match="launches 32"):
        @T.prim_func
        def main(A: T.Tensor((32,), T.int32)):
            with T.Kernel(1, threads=32):
                tx = T.launch_thread("threadIdx.x", 64)
                A[tx] = 0


def test_region_store_copies_or_fills():
    @tilelang.jit(target="cpu")
    def k(A: T.Tensor((16, 16), dtype=T.float32)):
        for _bx in T.thread_binding(1, thread="blockIdx.x"):
            for _tx in T.thread_binding(128, thread="threadIdx.x"):
                b = A[0, 0:4]
                A[0, 4:8] = b
                A[1, 0:16] = 2.0

    a = torch.randn(16, 16)
    ref = a.clone()
    ref[0, 4:8] = ref[0, 0:4]
    ref[1] = 2
    k(a)
    assert torch.equal(a, ref)


def test_signature_annotated_kernel_compiles_without_tensors():
    @tilelang.jit(target="cpu")
    def k(A: T.Tensor((64,), T.float16), B: T.Tensor((64,), T.float16)):
        with T.Kernel(1, threads=32):
            A_shared = T.alloc_shared((32,), T.float16)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(A[k * 32], A_shared)
                for i in T.Parallel(32):
                    B[k * 32 + i] = A_shared[i] + 1.0

    kern = k.compile()
    a = torch.randn(64).half()
    b = torch.empty_like(a)
    kern(a, b)
    torch.testing.assert_close(b, a + 1)


def test_unroll_step_factor_and_explicit():
    @T.prim_func
    def main(A: T.Tensor((3, 16), T.float32)):
        with T.Kernel(1, threads=1):
            for i in T.unroll(0, 16, step=4):
                A[0, i] = 1.0
            for i in T.unroll(0, 16, unroll_factor=4):
                A[1, i] = 2.0
            for i in T.unroll(16, explicit=True):
                A[2, i] = 3.0

    loops = []
    walk(main.body, lambda n: loops.append(n) if isinstance(n, S.For) else None)
    assert [lp.annotations for lp in loops] == [{}, {"pragma_unroll_factor": 4}, {"pragma_unroll_explicit": True}]
    assert int(loops[0].step.value) == 4 and int(loops[0].extent.value) == 4
    a = np.zeros((3, 16), np.float32)
    tilelang.compile(main, target="cpu")(a)
    ref = np.zeros((3, 16), np.float32)
    ref[0, ::4] = 1
    ref[1] = 2
    ref[2] = 3
    np.testing.assert_array_equal(a, ref)


def test_unroll_factor_and_explicit_are_exclusive():
    with pytest.raises(ValueError, match="mutually exclusive"):
        T.unroll(16, explicit=True, unroll_factor=4)


def test_align_up():
    @T.prim_func
    def main(A: T.Tensor((3,), T.int32), n: T.int32):
        with T.Kernel(1, threads=1):
            A[0] = T.align_up(n, 16)
            A[1] = T.align_up(32, 16)
            A[2] = T.align_up(n + 16, 16)

    a = np.zeros(3, np.int32)
    tilelang.compile(main, target="cpu")(a, 17)
    assert a.tolist() == [32, 32, 48]
