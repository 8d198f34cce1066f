"""plan/copy_forms.py: an accumulator stored several columns per instruction
(ops/register_store.py), and the chunks of a thread-tile fragment copied as vectors
(ops/register_vector.py), are decided by the pass and printed on the nest (`registers xW`);
emit/kernel.py `fragment_loop` and emit/tile_loops.py print them. Checked on the printed IR
before and after the pass."""

import tilelang.language as T
# the printed IR before and after plan_copy_forms, its notes on T.Parallel nests
from tests.backend.cuda.plan.test_copy_forms import _before_after, _notes
from tests.backend.cuda.ops.test_gemm_fp8 import scaled_fp8_gemm
from tests.backend.cuda import kernels


def epilogue(out="float16", atomic=False, M=256, N=256, K=64, shift=0):
    """acc = A @ B, then C[i, j + shift] = acc[i, j] (or T.atomic_add of it)."""
    @T.prim_func
    def f(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N + shift), out)):
        with T.Kernel(N // 128, M // 128, threads=128) as (bx, by):
            As = T.alloc_shared((128, K), "float16")
            Bs = T.alloc_shared((K, 128), "float16")
            acc = T.alloc_fragment((128, 128), "float32")
            T.copy(A[by * 128, 0], As)
            T.copy(B[0, bx * 128], Bs)
            T.gemm(As, Bs, acc, clear_accum=True)
            for i, j in T.Parallel(128, 128):
                if atomic:
                    T.atomic_add(C[by * 128 + i, bx * 128 + j + shift], acc[i, j])
                else:
                    C[by * 128 + i, bx * 128 + j + shift] = acc[i, j] * 2.0
    return f


def test_a_16_bit_epilogue_stores_column_pairs():
    before, after = _before_after(epilogue())
    assert "registers" not in "".join(_notes(before))
    assert _notes(after)[-1] == "loop -> registers x2 (4 B)"


def test_float32_atomics_go_out_in_pairs():
    _, after = _before_after(epilogue("float32", atomic=True))
    assert _notes(after)[-1] == "loop -> registers x2 (8 B)"


def test_fp8_stores_four_columns_per_word():
    _, after = _before_after(scaled_fp8_gemm(256, 256, 256))
    assert _notes(after)[-1] == "loop -> registers x4 (4 B)"


def test_no_packed_store_where_the_run_is_misaligned_or_on_sm80():
    # a float32 tensor (one register a store), an odd column offset, sm_80: one store per register
    for func, arch in ((epilogue("float32"), "sm_90a"), (epilogue(shift=1), "sm_90a"), (epilogue(), "sm_80")):
        _, after = _before_after(func, arch)
        assert "registers x" not in after, _notes(after)


def test_thread_tile_rows_move_as_16_byte_vectors():
    # softmax: each row of a (4, 1024) float32 tile in and out, four elements a vector
    before, after = _before_after(kernels.softmax())
    assert _notes(before) == []
    assert _notes(after) == ["copy -> registers x4 (16 B)"] * 2


def test_a_thread_tile_copy_of_odd_rows_goes_element_by_element():
    # rows of 1001 elements: no vector of 2 or more divides the row stride
    _, after = _before_after(kernels.softmax(N=1001, width=1024))
    assert _notes(after) == ["copy -> registers"] * 2, _notes(after)
