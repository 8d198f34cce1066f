"""ops/tma.py `tile_swizzle_bytes`, `plain_row_bytes`: a shared tile whose user-annotated
layout (`make_swizzled_layout`) is exactly a TMA swizzle takes bulk tensor copies, 8-bit
tiles included, and so does a row-major uint8 tile (one unswizzled box): the packed tile of a
dequantizing GEMM (the published bf16 mxfp4 Hopper example: 64-byte rows, the 64B swizzle;
bf16 fp4: row-major) no longer sends the whole pipelined loop, its bf16 A tile too, back to
cp.async (16 cp.async per thread and iteration there)."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops


def dequant_gemm(M=256, N=256, K=256, block_M=128, block_N=128, block_K=128, threads=256, swizzle=True):
    """C = A @ dequant(B)^T, B two int4 per byte (low nibble first), value = nibble - 8."""
    QK, bQK = K // 2, block_K // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), T.bfloat16), B: T.Tensor((N, QK), T.uint8), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), T.bfloat16)
            B_shared = T.alloc_shared((block_N, bQK), T.uint8)
            B_dq = T.alloc_shared((block_N, block_K), T.bfloat16)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            if swizzle:
                T.annotate_layout({B_shared: tilelang.layout.make_swizzled_layout(B_shared)})
            T.clear(C_local)
            for k in T.Pipelined(K // block_K, num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * bQK], B_shared)
                for i, j in T.Parallel(block_N, block_K):
                    B_dq[i, j] = T.Cast(T.bfloat16, T.Cast(T.int32, (B_shared[i, j // 2] >> T.Cast(T.uint8, 4 * (j % 2)))
                                                                & T.uint8(15)) - 8)
                T.gemm(A_shared, B_dq, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])
    return main


def test_annotated_64b_swizzle_of_a_uint8_tile_is_a_tma_swizzle():
    from tilelang.backend.cuda.ops.tma import tile_swizzle_bytes
    from tilelang.backend.cuda.plan.kernel import Placement
    from tilelang.ir.buffer import Buffer
    b = Buffer("B_shared", [128, 64], "uint8", scope="shared.dyn")
    lay = tilelang.layout.make_swizzled_layout(b)
    assert tile_swizzle_bytes(Placement("smem", layout=lay), b) == 64
    assert tile_swizzle_bytes(Placement("smem", strides=[64, 1]), b) == 0     # row-major: cp.async
    # our own placements give the strip's bytes (tl::sw128<R, 1> for an 8-bit tile: the fp8 wgmma operands)
    assert tile_swizzle_bytes(Placement("smem", swizzle=128), b) == 128


@needs_nvrtc
def test_pipelined_loop_with_a_swizzled_uint8_tile_runs_on_the_tma_ring():
    from tilelang.backend.cuda.ops.tma import TmaCopy
    from tilelang.backend.cuda.emit.module import tensor_map_spec
    art = build(dequant_gemm())
    src = art.source
    assert "tl::tma_load_2d(B_shared" in src and "tl::tma_load_2d(A_shared" in src, src
    assert "cp_async" not in src, src
    # the uint8 tile's map: 1-byte elements, a box of 64 bytes x 128 rows (innermost first), the 64B swizzle
    B = dequant_gemm().params[1]
    B = getattr(B, "buffer", B)
    spec = tensor_map_spec(TmaCopy(B, None, 128, 64, 0, 0, 8192, width=64, elem_bytes=1), [B], {})
    assert spec["elem_bytes"] == 1 and spec["box"] == [64, 128] and spec["swizzle"] == 2, spec
    # without the annotation the uint8 tile is row-major: one unswizzled box per tile
    plain = build(dequant_gemm(swizzle=False)).source
    assert "tl::tma_load_2d(B_shared" in plain and "cp_async" not in plain, plain
    spec = tensor_map_spec(TmaCopy(B, None, 128, 64, 0, 0, 8192, width=64, elem_bytes=1, plain=True), [B], {})
    assert spec["swizzle"] == 0, spec


def test_plain_rows_take_one_unswizzled_box():
    from tilelang.backend.cuda.ops.tma import plain_row_bytes
    from tilelang.backend.cuda.plan.kernel import Placement
    from tilelang.ir.buffer import Buffer
    b = Buffer("B_shared", [128, 64], "uint8", scope="shared.dyn")
    assert plain_row_bytes(Placement("smem", strides=[64, 1]), b) == 64
    assert plain_row_bytes(Placement("smem", strides=[72, 1]), b) == 0       # padded rows
    assert plain_row_bytes(Placement("smem", strides=[8, 1]), Buffer("t", [128, 8], "uint8", scope="shared")) == 0


@needs_sass
def test_dequant_gemm_sass_uses_utmaldg():
    ops = sass_ops(build(dequant_gemm()))
    assert ops["UTMALDG"] > 0 and ops["LDGSTS"] == 0 and ops["HGMMA"] > 0, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


@pytest.mark.gpu
@pytest.mark.parametrize("swizzle", [True, False])
def test_dequant_gemm_on_gpu(swizzle):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from tilelang.backend.registry import get_backend, parse_target
    torch.manual_seed(0)
    M = N = K = 256
    A = torch.randn(M, K, device="cuda").bfloat16()
    B = torch.randint(0, 256, (N, K // 2), device="cuda", dtype=torch.uint8)
    C = torch.full((M, N), float("nan"), device="cuda")
    be = get_backend("cuda")
    be.load(be.build(dequant_gemm(swizzle=swizzle), parse_target("cuda")))([A, B, C], (), ())
    torch.cuda.synchronize()
    lo, hi = (B & 15).int() - 8, (B >> 4).int() - 8
    Bd = torch.stack([lo, hi], dim=-1).reshape(N, K).float()
    ref = A.float() @ Bd.T
    torch.testing.assert_close(C, ref, rtol=1e-2, atol=1e-2)
