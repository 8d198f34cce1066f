"""Kernels whose threads talk to each other (shared memory, T.sync_threads, thread
all-reduces) on the CPU: the block runs in phases between the points where threads
may wait, each phase a loop over the threads (backend/cpu/thread_phases.py). Each kernel
is checked against numpy; what cannot be cut gets a typed error at the user's line."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import LoweringError


def _reverse():
    @T.prim_func
    def f(A: T.Tensor((4, 128), "float32"), B: T.Tensor((4, 128), "float32")):
        with T.Kernel(4, threads=128) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((128,), "float32")
            S[tx] = A[bx, tx]          # no barrier written: the cut goes between the two
            B[bx, tx] = S[127 - tx]
    return f


def _tree_sum():
    @T.prim_func
    def f(A: T.Tensor((8, 256), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(8, threads=256) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((256,), "float32")
            S[tx] = A[bx, tx]
            for k in T.serial(8):      # barriers inside a loop every thread runs alike
                T.sync_threads()
                if tx < (128 >> k):
                    S[tx] = S[tx] + S[tx + (128 >> k)]
            T.sync_threads()
            if tx == 0:
                B[bx] = S[0]
    return f


def _allreduce():
    @T.prim_func
    def f(A: T.Tensor((4, 8, 32), "float32"), B: T.Tensor((4, 8), "float32")):
        with T.Kernel(4, threads=(8, 32)) as bx:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            acc = T.alloc_local((1,), "float32")
            red = T.alloc_local((1,), "float32")
            acc[0] = A[bx, tn, tk] * 2.0
            with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, "float32")]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], tk, dtype="handle"))
            if tk == 0:
                B[bx, tn] = red[0]
    return f


def _tile_copy_then_threads():
    @T.prim_func
    def f(A: T.Tensor((2, 64, 64), "float32"), B: T.Tensor((2, 64), "float32")):
        with T.Kernel(2, threads=64) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((64, 64), "float32")
            n = T.alloc_var("int32", init=0)
            acc = T.alloc_local((1,), "float32")
            T.copy(A[bx, :, :], S)     # block-level: once, before the threads' phase
            T.clear(acc)
            for j in T.serial(64):
                acc[0] += S[j, tx]
                if S[j, tx] > 0:
                    n = n + 1
            T.sync_threads()           # per-thread `acc` and `n` live across it
            B[bx, tx] = acc[0] + n * 1000.0
    return f


def _splitk_gemv():
    # the published gemv example's split-K kernel: atomics into shared memory
    @T.prim_func
    def f(A: T.Tensor((256,), "float32"), Bm: T.Tensor((64, 256), "float32"), C: T.Tensor((64,), "float32")):
        with T.Kernel(4, threads=(16, 8)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            C_shared = T.alloc_shared((16,), "float32")
            C_accum = T.alloc_local((1,), "float32")
            if tk == 0:
                C_shared[tn] = 0
            T.clear(C_accum)
            for bk in T.serial(4):
                for k in T.serial(8):
                    C_accum[0] += A[bk * 64 + tk * 8 + k] * Bm[bn * 16 + tn, bk * 64 + tk * 8 + k]
            T.atomic_add(C_shared[tn], C_accum[0])
            C[bn * 16 + tn] = C_shared[tn]
    return f


def test_reverse_through_shared_memory():
    a = np.random.default_rng(0).standard_normal((4, 128)).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(_reverse(), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a[:, ::-1])


def test_tree_reduction_with_barriers_in_a_loop():
    a = np.random.default_rng(1).standard_normal((8, 256)).astype(np.float32)
    b = np.zeros(8, np.float32)
    k = tilelang.compile(_tree_sum(), target="cpu")
    k(a, b)
    np.testing.assert_allclose(b, a.sum(1), rtol=1e-4, atol=1e-4)
    src = k.get_kernel_source()
    assert src.count("for (int32_t tx = 0; tx < 256; ++tx)") == 3   # before, inside and after the loop


def test_thread_allreduce_over_one_thread_dimension():
    a = np.random.default_rng(2).standard_normal((4, 8, 32)).astype(np.float32)
    b = np.zeros((4, 8), np.float32)
    tilelang.compile(_allreduce(), target="cpu")(a, b)
    np.testing.assert_allclose(b, 2 * a.sum(2), rtol=1e-4, atol=1e-4)


def test_tile_ops_run_once_and_per_thread_values_survive_barriers():
    a = np.random.default_rng(3).standard_normal((2, 64, 64)).astype(np.float32)
    b = np.zeros((2, 64), np.float32)
    tilelang.compile(_tile_copy_then_threads(), target="cpu")(a, b)
    np.testing.assert_allclose(b, a.sum(1) + (a > 0).sum(1) * 1000.0, rtol=1e-4, atol=1e-3)


def test_split_k_gemv_with_shared_atomics():
    rng = np.random.default_rng(4)
    a = rng.standard_normal(256).astype(np.float32)
    m = rng.standard_normal((64, 256)).astype(np.float32)
    c = np.zeros(64, np.float32)
    tilelang.compile(_splitk_gemv(), target="cpu")(a, m, c)
    np.testing.assert_allclose(c, m @ a, rtol=1e-4, atol=1e-4)


def test_barrier_under_a_thread_dependent_branch_is_an_error_at_its_line():
    @T.prim_func
    def f(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((128,), "float32")
            S[tx] = A[tx]
            if tx < 64:
                T.sync_threads()
                A[tx] = S[tx + 64]
    with pytest.raises(LoweringError, match="depends on the thread index") as e:
        tilelang.compile(f, target="cpu")
    assert "test_thread_phases.py" in str(e.value) and "if tx < 64" in str(e.value)


def test_warp_shuffles_stay_an_error():
    @T.prim_func
    def f(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((32,), "float32")
            S[tx] = A[tx]
            A[tx] = T.shfl_xor(S[tx], 1)
    with pytest.raises(LoweringError, match="shfl"):
        tilelang.compile(f, target="cpu")


def test_tile_op_under_a_thread_range_is_an_error():
    # warp-specialized style: the gemm belongs to threads 0-127 only; running it once per
    # thread would accumulate 128 times, so the CPU backend refuses it
    @T.prim_func
    def f(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((64, 64), "float32")
            Cf = T.alloc_fragment((64, 64), "float32")
            T.copy(A, S)
            T.clear(Cf)
            if tx < 128:
                T.gemm(S, S, Cf)
            T.copy(Cf, C)
    with pytest.raises(LoweringError, match="tile operation"):
        tilelang.compile(f, target="cpu")


def test_per_thread_copies_do_not_leak_between_code_generators():
    # the map of per-thread buffers is keyed by id(buffer); a map shared between code
    # generators (a class attribute) let a later kernel's buffer that reused a freed id
    # be indexed as a per-thread copy: wrong results or a crash, depending on the GC
    from tilelang.backend.cpu.codegen import CodegenCPU
    assert "thread_copies" not in vars(CodegenCPU)
    k1 = tilelang.compile(_splitk_gemv(), target="cpu")
    k2 = tilelang.compile(_reverse(), target="cpu")
    assert "tl_tid * " in k1.get_kernel_source() and "tl_tid * " not in k2.get_kernel_source()


def test_uniform_break_leaves_the_loop_around_the_phases():
    @T.prim_func
    def f(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((64,), "float32")
            v = T.alloc_var("float32")
            S[tx] = A[tx]
            for k in T.serial(10):
                if k == 3:
                    break
                T.sync_threads()
                v = S[tx] + S[63 - tx]
                T.sync_threads()
                S[tx] = v
            B[tx] = S[tx]
    a = np.random.default_rng(5).standard_normal(64).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(f, target="cpu")(a, b)
    ref = a.copy()
    for _ in range(3):
        ref = ref + ref[::-1]
    np.testing.assert_allclose(b, ref, rtol=1e-5, atol=1e-5)


def test_thread_dependent_break_around_shared_code_is_an_error():
    @T.prim_func
    def f(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((64,), "float32")
            n = T.alloc_var("int32", init=0)
            for k in T.serial(4):
                if n > tx:
                    break
                S[tx] = A[tx] + k
                A[tx] = S[63 - tx]
                n = n + 20
    with pytest.raises(LoweringError, match="break"):
        tilelang.compile(f, target="cpu")


def test_uniform_while_loop_with_barriers():
    # halve the active width until one value is left: the loop condition reads shared memory
    @T.prim_func
    def f(A: T.Tensor((128,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((128,), "float32")
            W = T.alloc_shared((1,), "int32")
            S[tx] = A[tx]
            if tx == 0:
                W[0] = 64
            T.sync_threads()
            while W[0] > 0:
                if tx < W[0]:
                    S[tx] = S[tx] + S[tx + W[0]]
                T.sync_threads()
                if tx == 0:
                    W[0] = W[0] // 2
                T.sync_threads()
            if tx == 0:
                B[0] = S[0]
    a = np.random.default_rng(6).standard_normal(128).astype(np.float32)
    b = np.zeros(1, np.float32)
    tilelang.compile(f, target="cpu")(a, b)
    np.testing.assert_allclose(b[0], a.sum(), rtol=1e-4, atol=1e-4)


def test_tile_ops_in_a_phased_kernel_run_once_per_block():
    # before: a T.Parallel accumulation next to code that names the thread ran once per
    # thread (the sum came out 128 times too large)
    @T.prim_func
    def f(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((8,), "float32")
            T.copy(A, src)
            total = T.alloc_fragment((1,), "float32")
            T.clear(total)
            for i in T.Parallel(8):
                total[0] += src[i]
            if T.get_thread_binding() == 0:
                B[0] = total[0]
    a = np.arange(1, 9, dtype=np.float32)
    np.testing.assert_array_equal(tilelang.compile(f, out_idx=-1, target="cpu")(a), [36.0])


def test_uniform_updates_of_replicated_fragments_apply_once():
    # each GPU thread updates its own replica of a 1-element fragment once; before, the
    # CPU ran `s = a * s + b` once per thread on one copy (online logsumexp came out wrong)
    @T.prim_func
    def f(A: T.Tensor((256,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((128,), "float32")
            m = T.alloc_fragment((1,), "float32")
            s = T.alloc_fragment((1,), "float32")
            m[0] = -T.infinity("float32")
            s[0] = 0.0
            for k in T.serial(2):
                T.copy(A[k * 128], a)
                new_max = T.alloc_fragment((1,), "float32")
                T.fill(new_max, m[0])
                for i in T.Parallel(128):
                    new_max[0] = T.max(new_max[0], a[i])
                new_sum = T.alloc_fragment((1,), "float32")
                T.fill(new_sum, 0.0)
                for i in T.Parallel(128):
                    new_sum[0] += T.exp(a[i] - new_max[0])
                s[0] = T.exp(m[0] - new_max[0]) * s[0] + new_sum[0]
                m[0] = new_max[0]
            if T.get_thread_binding() == 0:
                B[0] = T.log(s[0]) + m[0]
    a = np.random.default_rng(0).standard_normal(256).astype(np.float32)
    out = tilelang.compile(f, out_idx=-1, target="cpu")(a)
    np.testing.assert_allclose(out, [np.log(np.exp(a.astype(np.float64)).sum())], rtol=1e-5)


def test_uniform_atomics_still_run_in_every_thread():
    @T.prim_func
    def f(C: T.Tensor((1,), "int32")):
        with T.Kernel(2, threads=64):
            tx = T.get_thread_binding()
            S = T.alloc_shared((64,), "int32")
            S[tx] = 1
            T.sync_threads()
            T.atomic_add(C[0], 1)
    c = np.zeros(1, np.int32)
    tilelang.compile(f, target="cpu")(c)
    assert c[0] == 128
