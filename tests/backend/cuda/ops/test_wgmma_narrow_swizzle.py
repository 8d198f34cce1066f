"""ops/wgmma.py: a K-major wgmma operand 32 or 16 columns wide takes the 64B / 32B swizzle,
and a warpgroup may compute several 64-row slabs (A's rows stored in slab_row order).

The layout functions of the header (tl::sw64, tl::sw32, tl::slab_row in async.h) are
compiled for the host and checked element by element: against the PTX ISA's swizzle modes
(the byte address of a K-major tile with 64- or 32-byte rows, bits [4, 6) / [4, 5) XORed
with bits [7, 9) / [7, 8)), and against the accumulator layout the gemm's registers follow
(MmaAccLayout, mirrored by layout/fragment.py's AccLayout) given the rows the PTX ISA assigns
to the registers of one m64nNk16 instruction."""
import pathlib
import re
import shutil
import subprocess

import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops

HEADER = pathlib.Path(__file__).resolve().parents[4] / "tilelang/backend/cuda/include/tl_cuda/async.h"


def _host_table(tmp_path, body):
    """Run `body` (C++ printing numbers) with the header's sw64 / sw32 / slab_row compiled
    for the host; returns the printed ints."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    text = HEADER.read_text()
    fns = [re.search(r"template <int \w+(?:, int \w+ = \d+)?> TL_DEVICE int %s\(.*?\n}\n" % name, text, re.S).group(0)
           for name in ("sw64", "sw32", "slab_row")]
    src = tmp_path / "t.cpp"
    src.write_text("#include <cstdio>\n#define TL_DEVICE inline\nnamespace tl {\n" + "".join(fns) +
                   "}\nint main() {\n" + body + "\n}\n")
    exe = tmp_path / "t"
    subprocess.run([cxx, "-O1", "-o", str(exe), str(src)], check=True)
    return [int(x) for x in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()]


@pytest.mark.parametrize("sw,rows,cols", [(64, 128, 32), (64, 64, 96), (32, 64, 16), (32, 128, 48)])
def test_narrow_swizzles_are_the_ptx_swizzle_modes(tmp_path, sw, rows, cols):
    got = _host_table(tmp_path, f"for (int r = 0; r < {rows}; ++r) for (int c = 0; c < {cols}; ++c) "
                                f"printf(\"%d \", tl::sw{sw}<{rows}>(r, c));")
    width = sw // 2                         # 16-bit columns per swizzle row
    bits = {64: 2, 32: 1}[sw]                # chunk-index bits the mode XORs
    want = []
    for r in range(rows):
        for c in range(cols):
            # strips of `width` columns, each a rows x sw-byte K-major block (the tile's
            # k-steps past one swizzle row: the next strip, rows * sw bytes further)
            addr = (c // width) * rows * sw + r * sw + (c % width) * 2
            addr ^= ((addr >> 7) & ((1 << bits) - 1)) << 4
            want.append(addr // 2)
    assert got == want


@pytest.mark.parametrize("slabs,warpgroups,n", [(2, 1, 128), (2, 2, 64), (4, 1, 32)])
def test_slab_rows_meet_the_accumulator_layout(tmp_path, slabs, warpgroups, n):
    from tilelang.backend.cuda.layout.fragment import AccLayout
    M = 64 * slabs * warpgroups
    stored = _host_table(tmp_path, f"for (int r = 0; r < {M}; ++r) printf(\"%d \", tl::slab_row<{slabs}>(r));")
    assert sorted(stored) == list(range(M))          # a permutation of the rows
    logical = {p: r for r, p in enumerate(stored)}
    acc = AccLayout(M, n, 4 * warpgroups, 1)
    for tid in range(128 * warpgroups):
        warp, lane, wg = (tid >> 5) & 3, tid & 31, tid >> 7
        for s in range(slabs):
            for j in range(n // 2):
                # PTX m64nNk16 D fragment: register j of a lane of warp w (of 4) holds
                # row 16 w + lane / 4 + 8 (j / 2 % 2), column 8 (j / 4) + 2 (lane % 4) + j % 2
                row = (wg * slabs + s) * 64 + 16 * warp + (lane >> 2) + 8 * ((j >> 1) & 1)
                col = 8 * (j >> 2) + 2 * (lane & 3) + (j & 1)
                reg = s * (n // 2) + j               # wgmma_ss_issue: slab s writes acc + s N / 2
                assert (acc.row(tid, reg), acc.col(tid, reg)) == (logical[row], col)


def gemm(M=512, N=512, K=512, bM=128, bN=128, bK=32, threads=128, stages=3):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_l = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bM, bx * bN])
    return main


def blocksparse(M=1024, N=1024, K=1024, bM=128, bN=128, bK=32, threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             Mask: T.Tensor((M // bM, N // bN, K // bK), "bool"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_l = T.alloc_fragment((bM, bN), "float32")
            T.use_swizzle(panel_size=10)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                if Mask[by, bx, k]:
                    T.copy(A[by * bM, k * bK], A_s)
                    T.copy(B[k * bK, bx * bN], B_s)
                    T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bM, bx * bN])
    return main


@needs_nvrtc
@pytest.mark.parametrize("threads,slabs", [(128, 2), (256, 1)])
def test_32_wide_k_tile_takes_wgmma_with_sw64(threads, slabs):
    # the single-role ring (plan/warp_specialize.py would add a producer warpgroup: its own tests)
    src = build(blocksparse(threads=threads), config={"tl.disable_warp_specialized": True}).source
    sl = f", {slabs}" if slabs > 1 else ""
    assert f"tl::wgmma_gemm_ss<128, 128, 32, false, false, half, 1, 64, 128{sl}>(" in src, src
    # the TMA ring: A in one 32-column box (its rows in slab order through a 4-D map), B in 64
    assert src.count(f"tl::tma_load_{4 if slabs > 1 else 2}d(A_s") == 2, src
    assert src.count("tl::tma_load_2d(B_s") == 2 * 2, src


def test_tma_boxes_of_a_slab_ordered_tile():
    from tilelang.backend.cuda.ops.tma import TmaCopy
    # (the fallback of a tile whose rows are bound-checked: one box per 16-row run)
    t = TmaCopy(None, None, 128, 64, 0, 0, 128 * 64 * 2, width=32, row_slabs=2)
    assert t.box_rows == 16 and t.swizzle_code == 2
    boxes = t.boxes()
    assert len(boxes) == 16
    # each 16-row run lands where slab_row puts its first row, in its strip of 128 x 32 elements
    stored = {(r, c): p for r, p, c in boxes}
    assert stored[(0, 0)] == 0 and stored[(16, 0)] == 64 and stored[(32, 0)] == 16 and stored[(112, 32)] == 112
    assert sorted(p for r, p, c in boxes if c == 0) == list(range(0, 128, 16))


def test_tensor_map_of_a_32_wide_tile():
    from tilelang.backend.cuda.ops.tma import TmaCopy
    from tilelang.backend.cuda.emit.module import tensor_map_spec
    f = blocksparse(threads=128)
    A = f.params[0]
    A = getattr(A, "buffer", A)
    spec = tensor_map_spec(TmaCopy(A, None, 128, 32, 0, 0, 8192, width=32, row_slabs=2), [A], {})
    assert spec["box"] == [32, 16] and spec["swizzle"] == 2, spec


@needs_sass
def test_32_wide_k_tile_sass():
    ops = sass_ops(build(blocksparse()))
    assert ops["HGMMA"] == 4 and ops["HMMA"] == 0, ops    # 2 k-steps x 2 slabs
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


@pytest.mark.gpu
@pytest.mark.parametrize("threads", [128, 256])
@pytest.mark.parametrize("bK", [16, 32])
def test_blocksparse_on_gpu(threads, bK):
    import torch
    import tilelang
    M = N = K = 512
    kern = tilelang.compile(blocksparse(M, N, K, bK=bK, threads=threads), out_idx=[-1], target="cuda")
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    mask = torch.rand(M // 128, N // 128, K // bK, device="cuda") < 0.5
    ref = torch.zeros(M, N, device="cuda")
    for k in range(K // bK):       # block k's product where the mask keeps it
        keep = mask[:, :, k].repeat_interleave(128, 0).repeat_interleave(128, 1).float()
        ref += keep * (a[:, k * bK:(k + 1) * bK].float() @ b[k * bK:(k + 1) * bK].float())
    torch.testing.assert_close(kern(a, b, mask).float(), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("threads", [128, 256])
@pytest.mark.parametrize("bK", [16, 32, 64])
def test_gemm_on_gpu(threads, bK):
    # the overlapped wgmma ring (no guard): sw32 / sw64 / sw128 A, 2 slabs per warpgroup at 128 threads
    import torch
    import tilelang
    kern = tilelang.compile(gemm(bK=bK, threads=threads), out_idx=[-1], target="cuda")
    torch.manual_seed(1)
    a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(kern(a, b).float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("rows,slabs", [(128, 2), (256, 2), (256, 4)])
def test_one_box_writes_the_slab_order(rows, slabs):
    """A tile stored in slab_row order is loaded by ONE box per strip (ops/tma.py
    TmaCopy.slab_view_map): emulate the bulk tensor copy of its tensor map (box element
    b at global byte sum((coord_d + b_d) * stride_d), written to shared memory in box
    order) and check that every global row lands where tl::slab_row puts it, and that
    the row dimension's extent lets exactly the in-bounds tiles through."""
    import numpy as np
    from tilelang.backend.cuda.ops.tma import TmaCopy
    from tilelang.backend.cuda.emit.module import tensor_map_spec
    M, K, width = 1024, 64, 32
    f = gemm(M=M, K=K)
    A = getattr(f.params[0], "buffer", f.params[0])
    t = TmaCopy(A, None, rows, K, 0, 0, rows * K * 2, width=width, row_slabs=slabs, slab_view=True)
    assert len(t.boxes()) == K // width and t.boxes()[0][:2] == (0, 0)
    spec = tensor_map_spec(t, [A], {})
    assert spec["box"][:2] == [width, 16] and int(np.prod(spec["box"])) == rows * width
    assert len(spec["box"]) == 2 + len(t.slab_view_map()[0]) <= 5
    dims = [int(eval(d)) for d in spec["dims"]]
    strides = [2] + spec["strides"]                       # bytes, innermost first
    for row0 in (0, rows, M - rows):
        coords = t.coords(row0, 0)
        assert coords[:2] == [0, row0] and all(c == 0 for c in coords[2:])
        idx = np.indices(spec["box"]).reshape(len(spec["box"]), -1)   # box order, innermost dim first
        # element j of the box in shared memory order: innermost dimension fastest
        flat = np.ravel_multi_index(idx[::-1], spec["box"][::-1])
        order = np.argsort(flat)
        byte = sum((np.asarray(c) + idx[d]) * strides[d] for d, c in enumerate(coords))[order]
        inside = np.all([(np.asarray(c) + idx[d])[order] < dims[d] for d, c in enumerate(coords)], axis=0)
        assert inside.all()                               # an in-bounds tile is never zero-filled
        grow, gcol = byte // (K * 2), byte % (K * 2) // 2
        srow = np.arange(rows * width) // width           # the shared row each element is written to
        assert (gcol == np.arange(rows * width) % width).all()
        assert [t.stored_row(r - row0) for r in grow] == list(srow)
    # the next tile would run past the tensor: its first rows' coordinate is out of the map
    assert M - rows + 16 > dims[1] - 1 and (M - rows) + 15 < dims[1]


def test_bound_checked_rows_keep_one_box_per_run():
    # 200 rows: the last tile's rows are bound-checked, which only the 2-D boxes zero-fill exactly
    src = build(gemm(M=200, N=256, K=256)).source
    assert "tl::tma_load_4d(A_s" not in src and src.count("tl::tma_load_2d(A_s") == 8, src


@pytest.mark.gpu
@pytest.mark.parametrize("M,bM,threads,bK", [(512, 128, 128, 32), (512, 256, 256, 64), (512, 256, 128, 32),
                                             (200, 128, 128, 32), (1000, 128, 128, 64)])
def test_slab_ordered_tile_boxes_on_gpu(M, bM, threads, bK):
    # A in slab_row order: one 4-D (one warpgroup) or 5-D (two) box per strip; 200 / 1000 rows:
    # the bound-checked last tile keeps the 16-row boxes
    import torch
    import tilelang
    kern = tilelang.compile(gemm(M=M, N=256, K=256, bM=bM, bK=bK, threads=threads), out_idx=[-1], target="cuda")
    torch.manual_seed(3)
    a = torch.randn(M, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(kern(a, b).float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)
