"""before / expected for the safe-memory-access legalization."""
import tilelang.language as T
from tilelang.transform.legalize_safe_memory_access import legalize_safe_memory_access
from tilelang.transform.lower_tile_ops import lower_tile_ops


def _legal(f):
    return legalize_safe_memory_access(lower_tile_ops(f)).script()


def test_unprovable_accesses_are_guarded():
    n = T.dynamic("n")

    @T.prim_func
    def f(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 32)) as bx:
            for i in T.Parallel(32):
                C[bx * 32 + i] = A[bx * 32 + i] + 1.0
    text = _legal(f)
    assert "if bx * 32 + i < n:" in text
    assert "T.if_then_else(bx * 32 + i < n, A[bx * 32 + i], 0.0)" in text


def test_provable_accesses_are_left_alone():
    @T.prim_func
    def f(A: T.Tensor((128,), "float32"), C: T.Tensor((128,), "float32")):
        with T.Kernel(4) as bx:
            for i in T.Parallel(32):
                C[bx * 32 + i] = A[(bx * 32 + i) % 128] + 1.0
    text = _legal(f)
    assert "if " not in text and "if_then_else" not in text


def test_a_dynamic_grid_extent_bounds_its_block_index():
    """`T.Kernel(n) as i` over a dynamic n: row i of an (n, ...) tensor is in bounds (the
    tile copies of DeepSeek mHC's pre block); a row past it (i + 1) is still guarded."""
    n = T.dynamic("n")

    @T.prim_func
    def f(A: T.Tensor((n, 64), "float32"), C: T.Tensor((n, 64), "float32")):
        with T.Kernel(n) as i:
            s = T.alloc_shared((64,), "float32")
            T.copy(A[i, 0:64], s)
            for j in T.Parallel(64):
                C[i, j] = s[j] + A[i + 1, j]
    text = _legal(f)
    assert "i < n" not in text, text
    assert "i + 1 < n" in text, text


def test_the_users_own_guard_is_enough():
    @T.prim_func
    def f(A: T.Tensor((100,), "float32"), C: T.Tensor((100,), "float32")):
        with T.Kernel(4) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < 100:
                    C[bx * 32 + i] = A[bx * 32 + i] + 1.0
    text = _legal(f)
    assert text.count("if ") == 1 and "if_then_else" not in text


def test_cpu_skips_out_of_bounds_stores_to_block_arrays():
    # a fragment shorter than the loop that fills it must not corrupt the process on the
    # CPU: it gets the loop's length of storage (its registers follow the loop on the GPU);
    # other out-of-range stores are skipped (tests/backend/cpu/test_scalar_fragment.py)
    import numpy as np
    import tilelang
    import tilelang.language as T

    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), O: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            small = T.alloc_fragment((4,), "float32")
            for i in T.Parallel(64):
                small[i] = A[i]          # only i < 4 is in bounds
            for i in T.Parallel(4):
                O[i] = small[i]
    kern = tilelang.compile(k, target="cpu")
    a = np.arange(64, dtype=np.float32)
    o = np.zeros(64, np.float32)
    kern(a, o)
    np.testing.assert_array_equal(o[:4], a[:4])
    src = kern.get_kernel_source()
    assert "tl::alloc(sizeof(float) * (size_t)(64))" in src and "if ((i < 4))" not in src


def test_annotated_safe_value_is_what_outside_loads_read():
    # before: T.annotate_safe_value was ignored and the padding read 0 (a wrong result)
    @T.prim_func
    def f(A: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
        with T.Kernel(2) as bx:
            T.annotate_safe_value({A: 10})
            for i in T.Parallel(32):
                C[bx * 32 + i] = A[bx * 32 + i - 3]
    text = _legal(f)
    assert "T.annotate_safe_value({A: 10})" in text
    assert "T.if_then_else(bx * 32 + i - 3 >= 0, A[bx * 32 + i - 3], 10.0)" in text


def test_safe_value_runs_on_the_cpu():
    import numpy as np
    import tilelang

    def make(pad):
        @T.prim_func
        def f(A: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
            with T.Kernel(2) as bx:
                T.annotate_safe_value({A: pad})
                S = T.alloc_shared((32,), "float32")
                T.copy(A[bx * 32 - 4], S)
                T.copy(S, C[bx * 32])
        return tilelang.compile(f, out_idx=[1], target="cpu")
    a = np.arange(64, dtype=np.float32)
    for pad in (7, -1):   # two kernels that differ only in the pad value: two cache entries
        ref = np.concatenate([np.full(4, pad, np.float32), a[:60]])
        np.testing.assert_array_equal(make(pad)(a), ref)


def test_thread_indices_are_bounded_by_the_block():
    @T.prim_func
    def f(A: T.Tensor((128, 8), "float32"), B: T.Tensor((128, 8), "float32"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            B[tx, 0] = A[tx, 1]
            C[tx] = 1.0      # 128 threads, 64 elements: still guarded
    text = _legal(f)
    assert "B[tx, 0] = A[tx, 1]" in text and "if tx < 64:" in text


def test_a_loop_variable_lies_within_its_symbolic_bounds():
    n = T.dynamic("n")

    @T.prim_func
    def f(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for j in T.serial(n):
                B[j] = A[j] * 2.0
    text = _legal(f)
    assert "if " not in text and "if_then_else" not in text


def _tile_copy(rows, grid):
    @T.prim_func
    def f(A: T.Tensor((rows, 64), "float16"), C: T.Tensor((rows, 64), "float16")):
        with T.Kernel(grid, threads=128) as bx:
            s = T.alloc_shared((32, 64), "float16")
            T.copy(A[bx * 32, 0], s)
            T.copy(s, C[bx * 32, 0])
    return f


def test_tile_copy_guards_the_ranges_prove_are_dropped():
    # T.copy guards every tile; 0 <= bx < 4 and 0 <= i < 32 prove `bx * 32 + i < 128`
    text = _legal(_tile_copy(128, 4))
    assert "if " not in text and "if_then_else" not in text, text


def test_tile_copy_guards_on_a_ragged_edge_stay():
    text = _legal(_tile_copy(100, 4))     # the last tile reaches row 127 of 100
    assert "T.if_then_else(bx * 32 + i0 < 100" in text and "if bx * 32 + i0_1 < 100:" in text, text


def test_only_the_unproven_conjunct_of_a_users_condition_stays():
    @T.prim_func
    def f(A: T.Tensor((128,), "float32"), C: T.Tensor((128,), "float32")):
        with T.Kernel(4) as bx:
            for i in T.Parallel(32):
                C[bx * 32 + i] = T.if_then_else(bx * 32 + i < 128 and A[i] > 0.0, A[i], 0.0)
    text = _legal(f)
    assert "T.if_then_else(A[i] > T.float32(0)" in text or "T.if_then_else(A[i] > 0.0" in text, text


def test_a_condition_on_the_thread_index_stays_although_it_always_holds():
    # `if tx < 64:` with 64 threads is what makes the statement under it per thread (a
    # block-level statement runs once): dropping it ran a per-thread atomic once (H200)
    @T.prim_func
    def f(Dst: T.Tensor((4,), "float32"), Prev: T.Tensor((64, 4), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            if tx < 64:
                Prev[tx, 0:4] = T.atomic_addx4(Dst[0:4], 1.0, return_prev=True)
    text = _legal(f)
    assert "if tx < 64:" in text, text
