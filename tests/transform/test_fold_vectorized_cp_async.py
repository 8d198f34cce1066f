"""before / expected for fold_vectorized_cp_async: the one-element `T.ptx_cp_async` of
each lane of a `T.vectorized` loop becomes one cp.async of all the lanes' bytes, from the
first lane's addresses; lanes that do not add up to 4, 8 or 16 bytes are a located error."""
import pytest

import tilelang.language as T
from tilelang.ir import stmt as S
from tilelang.ir.async_copy import PTX_CP_ASYNC, PTX_CP_ASYNC_LANE
from tilelang.ir.errors import LoweringError
from tilelang.ir.visitor import walk
from tilelang.transform.fold_vectorized_cp_async import fold_vectorized_cp_async


def lanes(n, dtype="float16"):
    @T.prim_func
    def k(A: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=32):
            S_ = T.alloc_shared((64,), dtype)
            for i in T.vectorized(n):
                T.ptx_cp_async(T.access_ptr(S_[i], "w", 1), T.access_ptr(A[i], "r", 1), 1)
    return k


def _calls(func):
    out = []
    walk(func.body, lambda x: out.append(x.value) if isinstance(x, S.Evaluate) and hasattr(x.value, "name")
         and x.value.name in (PTX_CP_ASYNC, PTX_CP_ASYNC_LANE) else None)
    return out


def test_four_half_lanes_become_one_8_byte_copy():
    before = lanes(4)
    assert [c.name for c in _calls(before)] == [PTX_CP_ASYNC_LANE]
    after = fold_vectorized_cp_async(before)
    calls = _calls(after)
    assert [c.name for c in calls] == [PTX_CP_ASYNC]
    text = after.script()
    assert "T.vectorized" not in text                        # the loop is gone
    assert "S_[0]" in text and "A[0]" in text, text          # the first lane's addresses
    loops = []
    walk(after.body, lambda x: loops.append(x) if isinstance(x, S.For) else None)
    assert not loops


def test_three_half_lanes_are_an_error_at_the_users_line():
    with pytest.raises(LoweringError, match="4, 8 or 16 bytes; this one moves 16 bits") as e:
        fold_vectorized_cp_async(lanes(3))
    assert "test_fold_vectorized_cp_async.py" in str(e.value)
