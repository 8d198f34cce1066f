"""`T.atomic_add(dst, shared_tile, use_tma=True)` (backend/cuda/ops/tma_reduce.py): one bulk
tensor reduction (UTMAREDG) per tile on sm_90+, the tensor map's element type the
tensor's; the target and dtype are checked; what a tensor map cannot describe stays the
threads' atomics. Results as the threads' atomics (the CPU backend's)."""
import re

import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build


def _tile_kernel(dt, reps=1, shape=(16, 16)):
    @T.prim_func
    def k(out: T.Tensor(shape, dt)):
        with T.Kernel(1):
            s = T.alloc_shared(shape, dtype=dt)
            T.fill(s, 1)
            for _ in range(reps):
                T.atomic_add(out, s, use_tma=True)
    return k


def _blocks_kernel(dt, M=40, N=64):
    """Blocks add 16 x 32 tiles of (i + j) into a (3, M, N) tensor; the last row of tiles
    runs past M (the bulk reduction skips what is outside, as the threads' guards do)."""
    @T.prim_func
    def k(out: T.Tensor((3, M, N), dt)):
        with T.Kernel(N // 32, T.ceildiv(M, 16), 3) as (bx, by, bz):
            s = T.alloc_shared((16, 32), dtype=dt)
            for i, j in T.Parallel(16, 32):
                s[i, j] = T.cast(i + j + bz, dt)
            T.atomic_add(out[bz, by * 16:by * 16 + 16, bx * 32:bx * 32 + 32], s, use_tma=True)
            T.atomic_add(out[bz, by * 16:by * 16 + 16, bx * 32:bx * 32 + 32], s, use_tma=True)
    return k


def _lower(func, arch="sm_90a"):
    return tilelang.lower(func, target={"kind": "cuda", "arch": arch})


@pytest.mark.parametrize("dt,code", [("float16", 6), ("bfloat16", 9), ("float32", 7), ("int32", 3),
                                     ("uint32", 2), ("uint64", 4)])
def test_one_bulk_reduction_per_tile(dt, code):
    art = _lower(_blocks_kernel(dt))
    src = art.kernel_source
    assert src.count("tl::tma_store_add(&out_desc, s, (bx * 32), (by * 16), bz);") == 2   # one map for both
    assert "const __grid_constant__ tl::CUtensorMap out_desc" in src
    assert "tl::atomic_add" not in src and "AtomicAdd" not in src
    # the writers' proxy fence before the barrier that orders them before the reduction
    assert re.search(r"tl::fence_proxy_async\(\);\n\s*__syncthreads\(\);\n\s*if \(tl_tid == 0\) \{\n\s*"
                     r"tl::tma_store_add", src)
    (spec,) = art.meta["kernels"][0]["tmaps"]
    # innermost first; the element type is the one the hardware adds in; no swizzle
    assert spec["box"] == [32, 16, 1] and spec["data_type"] == code and spec["swizzle"] == 0
    assert spec["dims"] == ["64", "40", "3"]


def test_sm90_without_a_suffix_is_enough():
    assert "tl::tma_store_add" in _lower(_tile_kernel("float32"), "sm_90").kernel_source


@needs_sass
@pytest.mark.parametrize("dt", ["float16", "float32", "uint64"])
def test_sass_has_the_tensor_reduction(dt):
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(build(_blocks_kernel(dt)).binary)
    assert "UTMAREDG.3D.ADD" in text and "RED" not in text.replace("UTMAREDG", "")


def test_pre_hopper_targets_are_rejected():
    with pytest.raises(TileLangError, match=r"TMA atomic add requires a CUDA target with TMA support \(SM90\+\)"):
        _lower(_tile_kernel("float32"), "sm_80")


@pytest.mark.parametrize("dt", ["int16", "int64", "float64", "float32x2"])
def test_dtypes_the_hardware_cannot_add_are_rejected(dt):
    with pytest.raises(TileLangError, match=rf"TMA atomic add does not support dtype {dt}.*supported scalar dtypes"):
        _lower(_tile_kernel(dt))


def _fallback_kernels():
    @T.prim_func
    def part_of_tile(out: T.Tensor((16, 16), "float32")):
        with T.Kernel(1):
            s = T.alloc_shared((32, 16), dtype="float32")
            T.fill(s, 1)
            T.atomic_add(out, s[0:16, :], use_tma=True)

    @T.prim_func
    def ordered(out: T.Tensor((16, 16), "float32")):
        with T.Kernel(1):
            s = T.alloc_shared((16, 16), dtype="float32")
            T.fill(s, 1)
            T.atomic_add(out, s, memory_order="release", use_tma=True)

    @T.prim_func
    def unaligned_rows(out: T.Tensor((16, 6), "float32")):   # 24-byte rows
        with T.Kernel(1):
            s = T.alloc_shared((16, 6), dtype="float32")
            T.fill(s, 1)
            T.atomic_add(out, s, use_tma=True)

    @T.prim_func
    def from_registers(out: T.Tensor((16, 16), "float32")):
        with T.Kernel(1):
            f = T.alloc_fragment((16, 16), dtype="float32")
            T.fill(f, 1)
            T.atomic_add(out, f, use_tma=True)
    @T.prim_func
    def unaligned_column(out: T.Tensor((16, 24), "float32")):   # the box starts 12 bytes into a row
        with T.Kernel(1):
            s = T.alloc_shared((16, 4), dtype="float32")
            T.fill(s, 1)
            T.atomic_add(out[0:16, 3:7], s, use_tma=True)
    return [part_of_tile, ordered, unaligned_rows, from_registers, unaligned_column]


@pytest.mark.parametrize("k", _fallback_kernels(), ids=lambda k: k.name)
def test_what_a_tensor_map_cannot_describe_stays_thread_atomics(k):
    src = _lower(k).kernel_source
    assert "tma_store_add" not in src and "CUtensorMap" not in src
    assert "tl::atomic_add" in src or "AtomicAdd" in src


def test_disabling_tma_lowering_keeps_thread_atomics():
    art = tilelang.lower(_tile_kernel("float32"), target={"kind": "cuda", "arch": "sm_90a"},
                         pass_configs={"tl.disable_tma_lower": True})
    assert "tma_store_add" not in art.kernel_source


def test_printed_ir_keeps_the_request():
    from tilelang.ir.printer import func_str
    assert "use_tma=True" in func_str(_tile_kernel("float32"))   # (the printed IR is the cache key)


def _reference(dt, M=40, N=64):
    i = np.arange(16)[:, None] + np.arange(32)[None, :]
    ref = np.zeros((3, M, N), dtype=np.float64)
    for bz in range(3):
        for by in range((M + 15) // 16):
            rows = min(16, M - by * 16)
            for bx in range(N // 32):
                ref[bz, by * 16:by * 16 + rows, bx * 32:bx * 32 + 32] += 2 * (i[:rows] + bz)
    return ref


def test_cpu_backend_adds_the_same():
    k = tilelang.compile(_blocks_kernel("float32"), target="cpu")
    out = torch.zeros(3, 40, 64)
    k(out)
    np.testing.assert_array_equal(out.numpy(), _reference("float32"))


@pytest.mark.gpu
def test_repeated_tile_reduction_on_gpu():
    k = tilelang.compile(_tile_kernel("float32", reps=16), target="cuda")
    assert "tma_store_add" in k.get_kernel_source()
    out = torch.zeros(16, 16, device="cuda")
    k(out)
    torch.testing.assert_close(out, torch.full_like(out, 16.0), rtol=0, atol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "int32", "uint32", "uint64"])
def test_block_tiles_with_edges_on_gpu(dt):
    k = tilelang.compile(_blocks_kernel(dt), target="cuda")
    assert "tma_store_add" in k.get_kernel_source()
    tdt = getattr(torch, dt)
    out = torch.zeros(3, 40, 64, dtype=tdt, device="cuda")
    k(out)
    # small integers: exact in every dtype (float16/bfloat16 up to 256)
    np.testing.assert_array_equal(out.cpu().to(torch.float64).numpy(), _reference(dt))


def _annotated_kernel(dt, make_layout):
    @T.prim_func
    def k(out: T.Tensor((16, 16), dt)):
        with T.Kernel(1):
            s = T.alloc_shared((16, 16), dtype=dt)
            if make_layout is not None:
                T.annotate_layout({s: make_layout(s)})
            T.fill(s, 1)
            T.atomic_add(out, s, use_tma=True)
    return k


def test_a_tma_encodable_annotated_swizzle_is_kept_and_encoded():
    """The 16 x 16 float32 tile's make_swizzled_layout is the 64-byte swizzle: the tile is
    written through it and the tensor map of the reduction says so (swizzle 64B = 2)."""
    import tilelang.layout as L
    art = _lower(_annotated_kernel("float32", L.make_swizzled_layout))
    assert "tl::tma_store_add(&out_desc, s" in art.kernel_source and " ^ " in art.kernel_source
    (spec,) = art.meta["kernels"][0]["tmaps"]
    assert spec["swizzle"] == 2
    (plain,) = _lower(_annotated_kernel("float32", None)).meta["kernels"][0]["tmaps"]
    assert plain["swizzle"] == 0


def test_an_annotated_layout_no_tensor_map_describes_is_rejected():
    import tilelang.layout as L
    with pytest.raises(TileLangError, match=r"TMA atomic add cannot encode the shared layout of `s`.*"
                                            r"not representable by a TensorMap descriptor"):
        _lower(_annotated_kernel("uint64", L.make_wgmma_swizzled_layout))


@pytest.mark.parametrize("k_major", [True, False])
def test_64_bit_operand_layout_is_a_permutation_no_tma_swizzle_describes(k_major):
    from tilelang.layout.swizzle import make_f64_operand_layout, detect_swizzle_mode, SwizzleMode
    from tilelang.ir.buffer import Buffer
    lay = make_f64_operand_layout(16, 32, k_major)
    off = np.asarray(lay.offsets())
    assert sorted(off.ravel().tolist()) == list(range(16 * 32))
    assert (off != np.arange(16 * 32).reshape(16, 32)).any()
    assert detect_swizzle_mode(lay, Buffer("s", (16, 32), "uint64", "shared")) is SwizzleMode.NONE
