"""Published import paths of the hand-written-GEMM helpers (`tilelang.cuda.intrinsics`,
`tilelang.language.fp8`, `tilelang.language.dtypes`) and what they compute."""
import numpy as np
import pytest

import tilelang.language as T


def test_get_swizzle_layout_is_the_xor_swizzle():
    from tilelang.cuda.intrinsics import get_swizzle_layout
    from tilelang.layout.swizzle import make_swizzle_layout_2d, SwizzleMode
    for cols, dtype, mode in [(32, "float16", SwizzleMode.SWIZZLE_64B), (64, "float16", SwizzleMode.SWIZZLE_128B),
                              (128, "int8", SwizzleMode.SWIZZLE_128B), (16, "float16", SwizzleMode.SWIZZLE_32B)]:
        rows = 16
        ours = make_swizzle_layout_2d(rows, cols, T.dtype(dtype).bits, mode).offsets()
        width = mode.value * 8 // T.dtype(dtype).bits
        got = np.zeros((rows, cols), np.int64)
        for i in range(rows):
            for j in range(cols):
                tile, r, c = get_swizzle_layout(i, j, cols, dtype)
                got[i, j] = (tile * rows + r) * width + c
        np.testing.assert_array_equal(got, ours)
    with pytest.raises(ValueError):
        get_swizzle_layout(0, 0, 8, "float16")   # 16-byte rows cannot swizzle


def test_make_mma_swizzle_layout():
    from tilelang.cuda.intrinsics import make_mma_swizzle_layout
    from tilelang.ir.buffer import Buffer
    lay = make_mma_swizzle_layout(Buffer("s", (64, 32), "float16", "shared"))
    assert lay.is_bijective() and lay.forward(2, 0) == (0, 2, 8) and lay.forward(1, 0) == (0, 1, 0)
    lin = make_mma_swizzle_layout(Buffer("s", (64, 24), "float16", "shared"))   # 48-byte rows: row-major
    assert lin.forward(3, 5) == (3, 5)


def test_mma_index_maps():
    from tilelang.cuda.intrinsics import mma_store_index_map, get_ldmatrix_offset, get_mma_micro_size
    from tilelang.layout.mma_tiling import WarpMmaTiling
    from tilelang.backend.cuda.ops.warp_mma import ldmatrix_address
    t = WarpMmaTiling.make("float16", "float16", "float32", False, True, 1, 1, 16, 16, 16)
    for lane in range(32):
        for s in range(8):
            assert mma_store_index_map(lane, s) == t.c_element(lane, 0, 0, 0, 0, s)
        assert get_ldmatrix_offset("A", lane, 0, 32, "float16", False) == ldmatrix_address(t, "A", lane)[0]
        assert get_ldmatrix_offset("B", lane, 0, 32, "float16", True) == ldmatrix_address(t, "B", lane)[0]
    assert get_mma_micro_size("float16") == (16, 16, 16) and get_mma_micro_size("int8") == (16, 16, 32)
    with pytest.raises(ValueError):
        get_ldmatrix_offset("A", 0, 0, 32, "int8", True)


def test_fp8_and_dtypes_modules():
    import torch
    from tilelang.language.fp8 import determine_fp8_type, determine_torch_fp8_type
    from tilelang.language.dtypes import _TORCH_DTYPE_TO_STR, dtype
    import tilelang.language.dtypes as dtypes
    assert determine_fp8_type() == T.float8_e4m3fn and determine_fp8_type("e5m2") == T.float8_e5m2
    assert determine_torch_fp8_type("e5m2") is torch.float8_e5m2
    with pytest.raises(ValueError):
        determine_fp8_type("e3m4")
    assert dtype(_TORCH_DTYPE_TO_STR[torch.half]) == T.float16 and _TORCH_DTYPE_TO_STR[torch.bfloat16] == "bfloat16"
    assert dtypes.float == T.float32 and dtypes.float8_e4m3 == T.float8_e4m3fn and dtypes.int16.bits == 16


def test_sparse_layout():
    from tilelang.cuda.intrinsics.sparse_layout import GROUP_CONFIG, get_e_factor, get_e_replicate_factor
    assert GROUP_CONFIG[T.float16] == (2, 4) and GROUP_CONFIG[T.float] == (1, 2)
    assert get_e_factor(T.float16, T.int16) == 16 and get_e_factor(T.float, T.int16) == 8
    assert get_e_factor(T.int8, T.int32) == 32
    assert get_e_replicate_factor(T.float16) == 2 and get_e_replicate_factor(T.int8) == 1
    with pytest.raises(ValueError):
        get_e_factor(T.float64, T.int16)


def test_older_intrinsics_path():
    from tilelang.intrinsics import get_swizzle_layout, TensorCoreIntrinEmitter
    from tilelang.intrinsics.mma_macro_generator import TensorCoreIntrinEmitter as E2
    import tilelang.cuda.intrinsics as new
    assert TensorCoreIntrinEmitter is E2 is new.TensorCoreIntrinEmitter
    assert get_swizzle_layout is new.get_swizzle_layout


def test_wgmma_descriptor_published_path_on_a_tvm_buffer():
    # the published test declares the tile with tvm.tirx.decl_buffer
    from tilelang import tvm  # noqa: F401 - installs the `tvm` shim
    from tvm import tirx
    from tilelang.cuda.intrinsics.macro.wgmma_macro_generator import compute_gmma_descriptor, WGMMADescriptorParams
    from tilelang.layout.swizzle import make_half_bank_swizzled_layout
    buf = tirx.decl_buffer((64, 256), "float16", name="B", scope="shared")
    assert buf.scope == "shared" and buf.name == "B"
    p = compute_gmma_descriptor(make_half_bank_swizzled_layout(buf), buf, transposed=False)
    assert isinstance(p, WGMMADescriptorParams) and p.swizzle_mode.wgmma_layout_type() == 2
    assert (p.leading_byte_offset, p.stride_byte_offset) == (1, 32)
