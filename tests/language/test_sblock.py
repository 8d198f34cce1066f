"""`T.sblock` scopes and the lexical scope of `T.annotate_safe_value` (the published
test_tilelang_language_copy.py `tilelang_copy_oob_safe_value_lexical_scope`)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.registry import get_backend, parse_target
from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.errors import TileLangError
from tilelang.ir.safe_values import SAFE_VALUE_MAP
from tilelang.ir.structural_hash import structural_hash
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import PassContext

M = N = 60
BM = BN = 64


def nested_scopes(inner_pad=-99, outer_pad=-1):
    """Before the fix the last annotation (-99) held for the whole kernel: both copies read
    -99 outside A (a wrong result)."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "int32"), Out: T.Tensor((BM, BN), "int32"),
             Inner: T.Tensor((BM, BN), "int32"), Elem: T.Tensor((BM, BN), "int32")):
        with T.Kernel(1, threads=128):
            inner = T.alloc_shared((BM, BN), "int32")
            outer = T.alloc_shared((BM, BN), "int32")
            with T.sblock("outer"):
                T.reads(A[0:M, 0:N])
                T.writes()
                # before the annotation, in its block: the block's value holds here too
                for i, j in T.Parallel(BM, BN):
                    Elem[i, j] = A[i, j]
                T.annotate_safe_value({A: outer_pad})
                with T.sblock("inner"):
                    T.reads()
                    T.writes()
                    T.annotate_safe_value({A: inner_pad})
                    T.copy(A[0:BM, 0:BN], inner)
                T.copy(A[0:BM, 0:BN], outer)
                for i, j in T.Parallel(BM, BN):
                    Out[i, j] = outer[i, j]
                    Inner[i, j] = inner[i, j]
    return main


def test_each_copy_reads_the_value_of_its_own_scope_on_the_cpu():
    kernel = tilelang.compile(nested_scopes(), out_idx=[1, 2, 3], target="cpu")
    a = np.arange(M * N, dtype=np.int32).reshape(M, N)
    out, inner, elem = kernel(a)
    for got, pad in ((out, -1), (inner, -99), (elem, -1)):
        np.testing.assert_array_equal(got[:M, :N], a)
        assert (got[M:, :] == pad).all() and (got[:, N:] == pad).all()


def test_the_printed_ir_shows_each_scope_with_its_annotation():
    text = nested_scopes().script()
    outer = text.index('with T.sblock("outer"):')
    inner = text.index('with T.sblock("inner"):')
    assert outer < text.index("T.annotate_safe_value({A: -1})") < inner
    assert inner < text.index("T.annotate_safe_value({A: -99})")
    assert "T.reads(A)" in text   # the whole tensor


def test_the_cache_key_differs_when_only_an_inner_safe_value_differs():
    assert structural_hash(nested_scopes(inner_pad=-99)) != structural_hash(nested_scopes(inner_pad=-98))
    assert structural_hash(nested_scopes()) == structural_hash(nested_scopes())


def _copy_pads(body):
    """The fill values of the lowered copies into `inner` and `outer`, by destination."""
    pads = {}

    def visit(n):
        if isinstance(n, S.BufferStore) and n.buffer.name in ("inner", "outer") and isinstance(n.value, E.Select):
            pads.setdefault(n.buffer.name, set()).add(E.const_int_value(n.value.f))
    walk(body, visit)
    return pads


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_90a", "cuda -arch=sm_80", "hip -arch=gfx942"])
def test_every_backend_pipeline_agrees_and_leaves_no_block_scope(target):
    t = parse_target(target)
    ctx = PassContext()
    ctx.target = t
    lowered = get_backend(t.kind).lower(nested_scopes(), t, ctx)
    assert _copy_pads(lowered.body) == {"inner": {-99}, "outer": {-1}}
    left = []
    walk(lowered.body, lambda n: left.append(n) if isinstance(n, S.SBlock) or
         SAFE_VALUE_MAP in (getattr(n, "annotations", None) or {}) else None)
    assert not left


def test_a_kernel_level_annotation_holds_for_the_whole_kernel_and_an_sblock_overrides_it():
    @T.prim_func
    def f(A: T.Tensor((4,), "float32"), B: T.Tensor((8,), "float32"), C: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            T.annotate_safe_value({A: 5.0})
            with T.sblock():
                T.annotate_safe_value({A: 7.0})
                for i in T.Parallel(8):
                    B[i] = A[i]
            for i in T.Parallel(8):
                C[i] = A[i]
    b, c = tilelang.compile(f, out_idx=[1, 2], target="cpu")(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(b, [0, 1, 2, 3, 7, 7, 7, 7])
    np.testing.assert_array_equal(c, [0, 1, 2, 3, 5, 5, 5, 5])


def test_misuse_is_a_clear_error():
    with pytest.raises(TileLangError, match="inside `with T.Kernel"):
        @T.prim_func
        def outside(A: T.Tensor((4,), "float32")):
            T.annotate_safe_value({A: 1.0})
            with T.Kernel(1):
                A[0] = 1.0
    with pytest.raises(TileLangError, match="T.reads can only be used directly inside"):
        @T.prim_func
        def reads(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.reads(A)
    with pytest.raises(TileLangError, match="T.writes takes buffers or buffer regions"):
        @T.prim_func
        def writes(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                with T.sblock("b"):
                    T.writes(3)
