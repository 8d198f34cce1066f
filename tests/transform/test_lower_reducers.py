"""Reduction epochs: T.reducer_init / T.reducer_update / T.finalize_reducer(acc, dst),
checked and lowered to the legacy reducer form (transform/lower_reducers.py)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError
from tilelang.transform.lower_reducers import lower_reducers


def _rowsum(start=None, op="sum"):
    @T.prim_func
    def k(A: T.Tensor((16, 32), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((16, 32), "float32")
            T.copy(A, a)
            acc = T.alloc_reducer((16,), "float32", op=op)
            if start is None:
                T.reducer_init(acc)
            else:
                T.reducer_init(acc, start)
            for i, j in T.Parallel(16, 32):
                T.reducer_update(acc[i], a[i, j])
            out = T.alloc_fragment((16,), "float32")
            T.finalize_reducer(acc, out)
            T.copy(out, B)
    return k


def test_lowering_before_and_after():
    text = lower_reducers(_rowsum(start=2.0)).script()
    assert "T.reducer_" not in text
    assert "acc_start = T.alloc_var(\"float32\")" in text and "acc_start[0] = 2.0" in text
    assert "T.fill(acc, 0.0)" in text and "acc[i] = acc[i] + a[i, j]" in text
    assert "T.finalize_reducer(acc)  # sum" in text and "out[r0] = acc[r0] + acc_start[0]" in text


@pytest.mark.parametrize("op,ref", [("sum", np.sum), ("max", np.max), ("min", np.min)])
def test_epochs_on_the_cpu_and_compile_for_cuda(op, ref):
    k = _rowsum(start=1.5, op=op)
    a = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    out = tilelang.compile(k, out_idx=-1, target="cpu")(a)
    want = ref(a, axis=1)
    want = want + 1.5 if op == "sum" else (np.maximum(want, 1.5) if op == "max" else np.minimum(want, 1.5))
    np.testing.assert_allclose(out, want, rtol=1e-5)
    tilelang.compile(k, out_idx=-1, target="cuda -arch=sm_90a")


def _kernel(body):
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            src = T.alloc_fragment((8,), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "float32", op="sum")
            res = T.alloc_fragment((1,), "float32")
            body(src, acc, res, B)
    return k


def _update(src, acc):
    for i in T.Parallel(8):
        T.reducer_update(acc[0], src[i])


@pytest.mark.parametrize("case,match", [
    ("update_before_init", "before T.reducer_init"),
    ("double_init", "double T.reducer_init"),
    ("never_finalized", "never finalized"),
    ("read", "illegal read of reducer"),
    ("outside_parallel", "outside any T.Parallel"),
    ("other_scope", "not in the scope of its T.reducer_init"),
])
def test_epoch_rules_are_located_errors(case, match):
    def body(src, acc, res, B):
        if case == "update_before_init":
            _update(src, acc)
            T.finalize_reducer(acc, res)
        elif case == "double_init":
            T.reducer_init(acc)
            T.reducer_init(acc)
            _update(src, acc)
            T.finalize_reducer(acc, res)
        elif case == "never_finalized":
            T.reducer_init(acc)
            _update(src, acc)
        elif case == "read":
            T.reducer_init(acc)
            _update(src, acc)
            B[0] = acc[0]
            T.finalize_reducer(acc, res)
        elif case == "outside_parallel":
            T.reducer_init(acc)
            T.reducer_update(acc[0], src[0])
            T.finalize_reducer(acc, res)
        else:
            for _ in T.serial(2):
                T.reducer_init(acc)
                _update(src, acc)
            T.finalize_reducer(acc, res)
    with pytest.raises(TileLangError, match=match) as ei:
        tilelang.compile(_kernel(body), target="cpu")
    assert "test_lower_reducers.py" in str(ei.value)


def test_bitwise_reducers_need_integers():
    with pytest.raises(AssertionError, match="integer dtype"):
        @T.prim_func
        def k(A: T.Tensor((8,), "float32")):
            with T.Kernel(1):
                T.alloc_reducer((1,), "float32", op="bitand")


def test_the_legacy_form_is_left_alone():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32")
            T.clear(acc)
            for i in T.Parallel(8):
                acc[0] += A[i]
            T.finalize_reducer(acc)
            B[0] = acc[0]
    assert lower_reducers(k) is k


@pytest.mark.parametrize("batch,match", [(128, "exceeds total output elements \\(64\\)"),
                                         (3, "must evenly divide total output elements \\(64\\)"),
                                         (0, "batch must be >= 1")])
def test_finalize_batch_must_divide_the_outputs(batch, match):
    with pytest.raises(ValueError, match=match) as ei:
        @T.prim_func
        def k(A: T.Tensor((64, 8), "float32"), B: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64):
                acc = T.alloc_reducer((64,), "float32", op="sum", replication="all")
                T.clear(acc)
                for i, j in T.Parallel(64, 8):
                    acc[i] += A[i, j]
                T.finalize_reducer(acc, batch=batch)
                T.copy(acc, B)
    assert "test_lower_reducers.py" in str(ei.value)
