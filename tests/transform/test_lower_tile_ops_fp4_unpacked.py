"""`T.float4_e2m1_unpacked` (published test_tilelang_language_tma_copy.py and
test_tilelang_language_float4_e2m1_unpacked_dtype.py): a shared-memory storage tag, one fp4
value per byte slot, that only sm_100's TMA unpack load fills. Its misuses are errors with the
published messages on every target; the unpack load itself is a clear target-feature error."""
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import LoweringError, TargetFeatureError
from tilelang.language.dtypes import is_float4, is_float4_e2m1_unpacked, is_float4_e2m1fn

TARGETS = ["cpu", "cuda -arch=sm_90a", {"kind": "cuda", "arch": "sm_100"}]


def test_the_dtype():
    u = T.float4_e2m1_unpacked
    assert u.bits == 8 and u.lanes == 1 and u != T.float4_e2m1fn and T.float4_e2m1fn.bits == 4
    assert T.dtype("custom[float4_e2m1_unpacked]8") is u   # TVM's spelling
    assert is_float4_e2m1_unpacked(u) and not is_float4_e2m1fn(u) and is_float4(u)
    assert is_float4("float4_e2m1fn") and not is_float4(T.float16)


def _kernel(second_copy):
    @T.prim_func
    def main(A: T.Tensor((128, 256), T.float4_e2m1fn), B: T.Tensor((128, 256), T.float4_e2m1fn)):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            A_shared = T.alloc_shared((64, 128), T.float4_e2m1_unpacked)
            mbar = T.alloc_barrier(128)
            T.tma_copy(A[by * 64, bx * 128], A_shared, barrier=mbar)
            T.barrier_arrive(mbar)
            T.mbarrier_wait_parity(mbar, 0)
            if second_copy == "tma store":
                T.tma_copy(A_shared, B[by * 64, bx * 128])
            elif second_copy == "simt load":
                T.copy(A[by * 64, bx * 128], A_shared)
            elif second_copy == "element read":
                for i, j in T.Parallel(64, 128):
                    B[by * 64 + i, bx * 128 + j] = A_shared[i, j]
    return main


@pytest.mark.parametrize("target", TARGETS, ids=str)
@pytest.mark.parametrize("second_copy, error, message", [
    ("tma store", LoweringError, "only supports float4_e2m1_unpacked as an FP4 unpack load"),
    ("simt load", LoweringError, "SIMT copy from packed global float4_e2m1fn to unpacked shared"),
    ("element read", LoweringError, "`A_shared` is float4_e2m1_unpacked shared memory"),
    (None, TargetFeatureError, "needs sm_100's TMA unpack data type"),
])
def test_misuses_first_then_the_unpack_load_this_backend_lacks(target, second_copy, error, message):
    with pytest.raises(error, match=message) as info:
        tilelang.lower(_kernel(second_copy), target=target, enable_device_compile=False)
    assert info.value.span is not None   # points at the user's line
