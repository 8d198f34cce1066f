"""ops/tma.py: a wgmma A tile whose warpgroups compute several 64-row slabs stores its rows
in tl::slab_row<S> order; where the source allows (2-D, rows a constant multiple of 64 S,
the tile starting on such a row), a 5-D view of the source's rows writes that order in one
box per 64-column strip (2 bulk copies for a 256 x 128 tile instead of 32). CPU: the tensor
map the launcher encodes, walked box element by box element as the copy engine does, puts
every row where tl::slab_row puts it; the kernels that qualify and those that keep 16-row
boxes; SASS. GPU: a 256-row-tile GEMM (the dequantizing examples' tile) against torch."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E
from tilelang.ir.buffer import Buffer
from tilelang.backend.cuda.ops.tma import TmaCopy, slab_view_ok
from tilelang.backend.cuda.emit.module import tensor_map_spec
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build


def _copy(M, K, rows, slabs, row0, cols=128):
    src = Buffer("A", (M, K), "float16")
    dst = Buffer("A_s", (rows, cols), "float16", scope="shared")
    t = TmaCopy(src, dst, rows, cols, E.convert(row0), E.convert(0), rows * cols * 2, row_slabs=slabs)
    t.slab_view = slab_view_ok(t)
    return t


def _walk(spec, coords, A):
    """What a tiled bulk copy with this map writes, as a flat array in box order
    (innermost dimension fastest), zero outside the tensor; swizzling left out (it
    permutes 16-byte chunks by shared address alike for every box shape)."""
    flat = A.reshape(-1)
    dims = [int(d) for d in spec["dims"]]
    strides = [1] + [s // spec["elem_bytes"] for s in spec["strides"]]
    out = []
    for idx in np.ndindex(*spec["box"][::-1]):
        pos = [c + i for c, i in zip(coords, idx[::-1])]
        inside = all(0 <= p < d for p, d in zip(pos, dims))
        out.append(flat[sum(p * s for p, s in zip(pos, strides))] if inside else 0)
    return np.array(out, dtype=A.dtype)


@pytest.mark.parametrize("M,rows,slabs,row0", [(512, 256, 2, 256), (512, 256, 2, 0), (384, 384, 2, 0),
                                               (1024, 256, 4, 256), (512, 256, 2, 512)])
def test_the_five_dimensional_view_writes_the_slab_row_order(M, rows, slabs, row0):
    K, cols = 192, 128
    t = _copy(M, K, rows, slabs, row0, cols)
    assert t.slab_view and t.box_rows == rows
    spec = tensor_map_spec(t, [t.src], {})
    assert spec["box"] == [64, 16, 4, slabs, rows // (64 * slabs)]
    A = np.arange(M * K, dtype=np.int64).reshape(M, K) + 1
    for r, p, c in t.boxes():
        coords = [E.const_int_value(x) if not isinstance(x, int) else x for x in t.coords(t.row0 + r, t.col0 + c)]
        got = _walk(spec, coords, A).reshape(rows, 64)   # stored rows x one 64-column strip
        for tr in range(rows):
            g = row0 + tr
            want = A[g, c:c + 64] if g < M else np.zeros(64, A.dtype)
            np.testing.assert_array_equal(got[t.stored_row(tr)], want)
    assert len(t.boxes()) == cols // 64


@pytest.mark.parametrize("M,rows,row0,why", [
    (520, 256, 0, "rows not a multiple of 128"),
    (512, 256, 64, "a tile starting inside a warpgroup's rows"),
])
def test_tiles_that_do_not_fit_the_view_keep_sixteen_row_boxes(M, rows, row0, why):
    t = _copy(M, 192, rows, 2, row0)
    assert not t.slab_view, why
    assert t.box_rows == 16 and len(t.boxes()) == 2 * rows // 16


def gemm256(M, N, K, dtype="bfloat16"):
    """A 256 x 128 block tile on two warpgroups (two slabs each), the dequantizing
    examples' tile, B read transposed."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 256), threads=256) as (bx, by):
            A_s = T.alloc_shared((256, 128), dtype)
            B_s = T.alloc_shared((128, 128), dtype)
            C_l = T.alloc_fragment((256, 128), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, 128), num_stages=2):
                T.copy(A[by * 256, k * 128], A_s)
                T.copy(B[bx * 128, k * 128], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True)
            T.copy(C_l, C[by * 256, bx * 128])
    return main


@needs_nvrtc
def test_a_256_row_tile_loads_in_two_boxes_a_ragged_one_in_sixteen_row_runs():
    art = build(gemm256(1024, 512, 512))
    (k,) = art.meta["kernels"]
    maps = k["tmaps"]
    assert [m["box"] for m in maps] == [[64, 16, 4, 2, 2], [64, 128]]
    assert maps[0]["dims"] == ["512", "16", "4", "2", "8"]   # 1024 rows: 8 groups of 128
    assert maps[0]["strides"] == [512 * 2, 32 * 512 * 2, 16 * 512 * 2, 128 * 512 * 2]
    src = art.source
    # per slot: two 5-D boxes of A (one per 64-column strip, the warpgroup row group by * 2)
    # and one of B, in the producer's loop
    assert src.count("tl::tma_load_5d(") == 2 and "(by * 2));" in src
    ragged = build(gemm256(1000, 512, 512)).source   # 1000 rows: the last tile runs past the end
    assert "tl::tma_load_5d(" not in ragged and ragged.count("tl::tma_load_2d(A_s") == 32


@pytest.mark.gpu
@pytest.mark.parametrize("M", [1024, 1000])
@pytest.mark.parametrize("ws", [True, False])
def test_gemm256_matches_torch_gpu(M, ws):
    import torch
    N, K = 512, 768
    cfg = {} if ws else {"tl.disable_warp_specialized": True}
    kern = tilelang.compile(gemm256(M, N, K), target="cuda", pass_configs=cfg)
    assert ("tl::tma_load_5d(" in kern.get_kernel_source()) == (M % 256 == 0)
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    kern(a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, rtol=2e-2, atol=2e-1)
