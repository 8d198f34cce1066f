"""fp8 `T.gemm` on CUDA. sm_90a, both operands K-major (A not transposed, B transposed):
warpgroup MMA `wgmma.mma_async m64nNk32` (e4m3 / e5m2, mixed too) on TMA-loaded tiles in the
64- or 128-byte swizzle (a 64- or 128-wide K tile of 1-byte elements), fp8 results stored
four columns per 32-bit store. Other layouts: mma.sync m16n8k32 (`tl::gemm_ss_k32`) where
ldmatrix can read them, the SIMT loop elsewhere. Checked on the config, the kernel plan,
the instruction text against the PTX ISA, the header's swizzles, the SASS, and on the GPU
against torch."""
import pathlib
import re
import shutil
import subprocess

import pytest

from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, plan_of as _plan, sass_ops
from tests.language.test_gemm_fp8 import fp8_gemm
from tilelang.backend.cuda.ops.wgmma import WgmmaConfig, instruction_wrappers, wgmma_config
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk

E4M3, E5M2 = "float8_e4m3fn", "float8_e5m2"
HEADER = pathlib.Path(__file__).resolve().parents[4] / "tilelang/backend/cuda/include/tl_cuda/async.h"


def _gemm_op(func):
    found = []
    walk(func.body, lambda n: found.append(n) if isinstance(n, TO.Gemm) else None)
    (op,) = found
    return op


@pytest.mark.parametrize("a,b", [(E4M3, E4M3), (E5M2, E5M2), (E4M3, E5M2), (E5M2, E4M3)])
@pytest.mark.parametrize("bk,sw", [(64, 64), (128, 128), (32, 32)])
def test_k_major_fp8_takes_wgmma(a, b, bk, sw):
    cfg = wgmma_config(_gemm_op(fp8_gemm(1024, 1024, 1024, a, b, out="float32", bk=bk)), "sm_90a", 128)
    assert isinstance(cfg, WgmmaConfig) and (cfg.M, cfg.N, cfg.K) == (128, 128, bk)
    assert cfg.dtype == a and cfg.b_dtype == b and cfg.dtype_b == ("" if a == b else b)
    assert cfg.inst_k == 32 and cfg.inst_n == 128 and cfg.slabs == 2 and not cfg.a_regs
    assert (cfg.swizzle_a, cfg.swizzle_b) == (sw, sw)   # the K tile's bytes per row


def test_other_fp8_gemms_keep_their_forms():
    nn = _gemm_op(fp8_gemm(1024, 1024, 1024, out="float32", trans_B=False))
    assert wgmma_config(nn, "sm_90a", 128) is None          # B K-outer: no fp8 wgmma form
    nt = _gemm_op(fp8_gemm(1024, 1024, 1024, out="float32"))
    assert wgmma_config(nt, "sm_80", 128) is None and wgmma_config(nt, "sm_90", 128) is None
    narrow = _gemm_op(fp8_gemm(1024, 1024, 1024, out="float32", bk=16))   # K < 32: one instruction's K
    assert wgmma_config(narrow, "sm_90a", 128) is None


@pytest.mark.parametrize("trans_B,kind", [(True, "wgmma"), (False, None)])
def test_plan_chooses_the_gemm_form(trans_B, kind):
    plan, launch = _plan(fp8_gemm(1024, 1024, 1024, E4M3, E5M2, out="float32", trans_B=trans_B))
    (cfg,) = plan.gemms.values()
    assert getattr(cfg, "kind", None) == kind
    decls = []
    walk(launch.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    shared = {b.name: plan.placements[id(b)] for b in decls if b.scope.startswith("shared")}
    if kind == "wgmma":   # 64-byte rows: sw64, A's rows in slab order for the 2 slabs of one warpgroup
        assert (shared["As"].swizzle, shared["As"].row_slabs) == (64, 2) and shared["Bs"].swizzle == 64
        assert shared["As"].stages == 3
    else:                 # no wgmma: plain rows (ldmatrix cannot transpose 8-bit K-outer B: SIMT loop)
        assert all(p.swizzle == 0 for p in shared.values())


def test_instruction_text_follows_the_ptx_isa():
    # PTX ISA, wgmma.mma_async: `.atype/.btype = {.e4m3, .e5m2}` with `.shape = .m64nNk32`
    # take `d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b` (no imm-trans-a/-b: K-major
    # only); the 16-bit forms (k16) add the two transpose immediates
    fp8 = WgmmaConfig(128, 128, 64, 4, 1, dtype=E4M3, dtype_b=E5M2, trans_B=True, swizzle_a=64, swizzle_b=64,
                      slabs=2)
    text = instruction_wrappers([fp8])
    assert "template <> struct WgmmaSS<128, __nv_fp8_e4m3, 0, 1, __nv_fp8_e5m2>" in text
    ins = re.search(r'"(wgmma\.mma_async[^"]*)"', text).group(1)
    assert ins.startswith("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2 {%0, ")
    assert ins.endswith("%63}, %64, %65, p, 1, 1;\\n}\\n"), ins
    f16 = WgmmaConfig(128, 128, 64, 4, 1, dtype="float16", trans_B=True)
    ins16 = re.search(r'"(wgmma\.mma_async[^"]*)"', instruction_wrappers([f16])).group(1)
    assert ".m64n128k16.f32.f16.f16" in ins16 and ins16.endswith("p, 1, 1, 0, 0;\\n}\\n")


def _host_table(tmp_path, body):
    """Run `body` (C++ printing numbers) with the header's swizzle functions compiled for the host."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    text = HEADER.read_text()
    fns = [re.search(r"template <int R, int EB = 2> TL_DEVICE int %s\(.*?\n}\n" % name, text, re.S).group(0)
           for name in ("sw128", "sw64", "sw32")]
    src = tmp_path / "t.cpp"
    src.write_text("#include <cstdio>\n#define TL_DEVICE inline\nnamespace tl {\n" + "".join(fns) +
                   "}\nint main() {\n" + body + "\n}\n")
    exe = tmp_path / "t"
    subprocess.run([cxx, "-std=c++17", "-O1", "-o", str(exe), str(src)], check=True)
    return [int(x) for x in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()]


@pytest.mark.parametrize("sw,rows,cols", [(128, 64, 128), (128, 16, 256), (64, 128, 64), (64, 64, 192),
                                          (32, 64, 32)])
def test_fp8_swizzles_are_the_ptx_swizzle_modes(tmp_path, sw, rows, cols):
    """tl::sw<SW><R, 1> (1-byte elements) against the PTX ISA's swizzle modes on byte
    addresses (bits [4, 7) / [4, 6) / [4, 5) XORed with bits [7, 10) / [7, 9) / [7, 8)), and
    the plan's Layout of the same tile (layout/shared.py) against the header."""
    got = _host_table(tmp_path, f"for (int r = 0; r < {rows}; ++r) for (int c = 0; c < {cols}; ++c) "
                                f"printf(\"%d \", tl::sw{sw}<{rows}, 1>(r, c));")
    bits = {128: 3, 64: 2, 32: 1}[sw]
    want = []
    for r in range(rows):
        for c in range(cols):
            # strips of sw columns (bytes), each a rows x sw-byte K-major block
            addr = (c // sw) * rows * sw + r * sw + (c % sw)
            addr ^= ((addr >> 7) & ((1 << bits) - 1)) << 4
            want.append(addr)
    assert got == want
    import tilelang.language as T
    from tilelang.backend.cuda.layout.shared import narrow_swizzle_layout

    @T.prim_func
    def f(A: T.Tensor((rows, cols), E4M3)):
        with T.Kernel(1, threads=128):
            As = T.alloc_shared((rows, cols), E4M3)
            T.copy(A, As)
    decls = []
    walk(f.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    lay = narrow_swizzle_layout(decls[0], sw)
    assert [int(x) for x in lay.offsets().reshape(-1)] == want


def test_tma_boxes_of_fp8_tiles():
    from tilelang.backend.cuda.emit.module import tensor_map_spec
    from tilelang.backend.cuda.ops.tma import TmaCopy
    f = fp8_gemm(1024, 1024, 1024)
    A = getattr(f.params[0], "buffer", f.params[0])
    # block_K 64: 64-byte rows, the 64B swizzle (CU_TENSOR_MAP_SWIZZLE_64B = 2), 16-row boxes (slab order)
    t = TmaCopy(A, None, 128, 64, 0, 0, 128 * 64, width=64, row_slabs=2, elem_bytes=1)
    assert t.swizzle_code == 2 and len(t.boxes()) == 8
    spec = tensor_map_spec(t, [A], {})
    assert spec["box"] == [64, 16] and spec["swizzle"] == 2 and spec["elem_bytes"] == 1, spec
    # block_K 128: one 128-byte strip, the launcher's default 128B swizzle
    t = TmaCopy(A, None, 128, 128, 0, 0, 128 * 128, width=128, row_slabs=2, elem_bytes=1)
    assert t.swizzle_code == 3 and "swizzle" not in tensor_map_spec(t, [A], {})


@needs_sass
@pytest.mark.parametrize("a,b,out,bk", [(E4M3, E4M3, E4M3, 64), (E4M3, E5M2, "float32", 128)])
def test_fp8_wgmma_sass(a, b, out, bk):
    art = build(fp8_gemm(512, 512, 512, a, b, out=out, bk=bk), "sm_90a")
    ops = sass_ops(art)
    from tilelang.backend.cuda.host.nvrtc import sass
    forms = set(re.findall(r"\b(QGMMA\.[A-Z0-9x.]+)", sass(art.binary)))
    assert forms == {f"QGMMA.64x128x32.F32.{a[7:11].upper()}.{b[7:11].upper()}"}, forms
    # 2 slabs x bk/32 per iteration; the warp-specialized consumer loop (a constant trip count) may be
    # unrolled by ptxas, so a multiple of that
    per_iteration = 2 * (bk // 32)
    assert ops["QGMMA"] % per_iteration == 0 and ops["QGMMA"] > 0, ops
    assert ops["HMMA"] == 0 and ops["HGMMA"] == 0, ops
    assert ops["UTMALDG"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0, ops
    if out == E4M3:   # 128 accumulator registers: 32 four-byte stores, one shuffle each
        assert ops["STG"] == 32 and ops["SHFL"] >= 32, ops


def scaled_fp8_gemm(M, N, K, out=E4M3, bm=128, bn=128, bk=64):
    """An epilogue reading the row and the column of each element: C = acc * sa[i] + sb[j]."""
    import tilelang.language as T

    @T.prim_func
    def f(A: T.Tensor((M, K), E4M3), B: T.Tensor((N, K), E4M3), sa: T.Tensor((M,), "float32"),
          sb: T.Tensor((N,), "float32"), C: T.Tensor((M, N), out)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), E4M3)
            Bs = T.alloc_shared((bn, bk), E4M3)
            Cl = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[bx * bn, k * bk], Bs)
                T.gemm(As, Bs, Cl, transpose_B=True)
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = Cl[i, j] * sa[by * bm + i] + sb[bx * bn + j]
    return f


@needs_nvrtc
def test_scaled_epilogue_reads_each_registers_row():
    src = build(scaled_fp8_gemm(256, 256, 256), "sm_90a").source
    body = src[src.index("tl::fp8_quad_word"):]
    call = body[:body.index(";")]
    # registers r, r + 1 scale by row R's factor, r + 2, r + 3 by row R + 8's
    rows = re.findall(r"sa\[\(?\(?by \* 128\)? \+ (\w+)\)?\]", call)
    assert len(rows) == 4 and rows[0] == rows[1] and rows[2] == rows[3] and rows[0] != rows[2], call


@needs_nvrtc
def test_fp8_other_forms_fall_back():
    assert "gemm_ss_k32" not in build(fp8_gemm(256, 256, 256, out="float32"), "sm_80").source   # no fp8 mma
    src = build(fp8_gemm(256, 256, 256, out="float32", trans_B=False), "sm_90a").source
    assert "gemm_ss_k32" not in src and "wgmma" not in src


def assert_close_to_fp8_wgmma_precision(c, a, b):
    """Hopper's fp8 wgmma adds its products into an accumulator of reduced precision (about 14
    mantissa bits: the DeepSeek-V3 report; the reason for the published 2xAcc example), so an
    fp32 reference differs by more than fp32 rounding (the H200 showed up to 0.2 on entries near
    30 at K=1024, 1-5% of entries past rtol 1e-3 / atol 1e-2). Bound: K/32 roundings of a
    sum no larger than sum |a_ik b_jk|, at 2^-14 each; a wrong layout or tile is off by O(1)."""
    import torch
    af, bf = a.float(), b.float()
    ref = af @ bf.T
    err = (c - ref).abs()
    bound = (af.abs() @ bf.abs().T) * (a.shape[1] / 32) * 2.0 ** -14 + 1e-2
    assert bool((err <= bound).all()), f"{int((err > bound).sum())} entries past the bound, max error {float(err.max())}"
    assert float((c - ref).norm() / ref.norm()) < 2e-3


@pytest.mark.gpu
@pytest.mark.parametrize("a_dtype,b_dtype", [(E4M3, E4M3), (E5M2, E5M2), (E4M3, E5M2)])
@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (1000, 1000, 1000), (1024, 512, 1056)])
@pytest.mark.parametrize("bk", [32, 64, 128])
def test_gpu_fp8_gemm_matches_torch(a_dtype, b_dtype, shape, bk):
    import torch
    import tilelang
    M, N, K = shape
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda").to(getattr(torch, a_dtype))
    b = torch.randn(N, K, device="cuda").to(getattr(torch, b_dtype))
    c = torch.zeros(M, N, device="cuda")
    tilelang.compile(fp8_gemm(M, N, K, a_dtype, b_dtype, out="float32", bk=bk), target="cuda")(a, b, c)
    assert_close_to_fp8_wgmma_precision(c, a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("bm,bn,bk,threads", [(128, 256, 128, 256), (64, 128, 64, 128), (256, 128, 64, 256)])
def test_gpu_fp8_block_shapes_match_torch(bm, bn, bk, threads):
    # two warpgroups along M (sw128, one slab each), a 64-row tile, two slabs per warpgroup at 256 threads
    import torch
    import tilelang
    M = N = K = 1024
    torch.manual_seed(2)
    a = torch.randn(M, K, device="cuda").to(torch.float8_e5m2)
    b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
    c = torch.zeros(M, N, device="cuda")
    f = fp8_gemm(M, N, K, E5M2, E4M3, out="float32", bm=bm, bn=bn, bk=bk, threads=threads)
    tilelang.compile(f, target="cuda")(a, b, c)
    assert_close_to_fp8_wgmma_precision(c, a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(512, 512, 512), (1000, 1000, 1024)])
def test_gpu_scaled_fp8_output_matches_torch(shape):
    import torch
    import tilelang
    M, N, K = shape
    torch.manual_seed(3)
    a = (torch.randn(M, K, device="cuda") / 8).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device="cuda") / 8).to(torch.float8_e4m3fn)
    sa, sb = torch.rand(M, device="cuda") + 0.5, torch.randn(N, device="cuda")
    c = torch.zeros(M, N, device="cuda").to(torch.float8_e4m3fn)
    tilelang.compile(scaled_fp8_gemm(M, N, K), target="cuda")(a, b, sa, sb, c)
    ref = ((a.float() @ b.float().T) * sa[:, None] + sb[None, :]).to(torch.float8_e4m3fn).float()
    torch.testing.assert_close(c.float(), ref, rtol=0.13, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("out", [E4M3, E5M2])
@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (1000, 1000, 1024)])
def test_gpu_fp8_output_matches_torch(out, shape):
    # the four-column stores: every element once, rounded like torch's cast
    import torch
    import tilelang
    M, N, K = shape
    torch.manual_seed(1)
    a = (torch.randn(M, K, device="cuda") / 8).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device="cuda") / 8).to(torch.float8_e4m3fn)
    c = torch.zeros(M, N, device="cuda").to(getattr(torch, out))
    tilelang.compile(fp8_gemm(M, N, K, E4M3, E4M3, out=out), target="cuda")(a, b, c)
    ref = (a.float() @ b.float().T).to(getattr(torch, out)).float()
    # at most one unit in the last place apart (3 / 2 mantissa bits), where the fp32 sums round differently
    torch.testing.assert_close(c.float(), ref, rtol=0.13 if out == E4M3 else 0.26, atol=1e-2)


@pytest.mark.parametrize("M,N,WM,WN", [(128, 128, 4, 1), (128, 128, 2, 2), (64, 256, 4, 2)])
def test_quad_stores_cover_the_tile_once(M, N, WM, WN):
    """The fp8 epilogue (emit/kernel.py `_quad_store`, tl::fp8_quad_word): lane 2t keeps its
    row-R pair and takes lane 2t + 1's row-R pair, lane 2t + 1 keeps its row-R + 8 pair and
    takes lane 2t's row-R + 8 pair; each stores four bytes at (row(tid, r + 2 odd), col(tid, r) - 2 odd). Every
    element of the accumulator tile lands once, at its own place, 4-byte aligned."""
    from tilelang.backend.cuda.layout.fragment import AccLayout
    L = AccLayout(M, N, WM, WN)
    where = {}
    for tid in range(32 * WM * WN):
        odd, partner = tid & 1, tid ^ 1
        for r in range(0, L.regs, 4):
            own = [(L.row(tid, r + e), L.col(tid, r + e)) for e in range(4)]
            other = [(L.row(partner, r + e), L.col(partner, r + e)) for e in range(4)]
            # what tl::fp8_quad_word sends: the even lane its row-R + 8 pair, the odd one its row-R pair
            word = other[2:4] + own[2:4] if odd else own[0:2] + other[0:2]
            row, col = L.row(tid, r + 2 * odd), L.col(tid, r) - 2 * odd
            assert col % 4 == 0
            for b, elem in enumerate(word):
                assert elem == (row, col + b)
                assert elem not in where
                where[elem] = tid
    assert len(where) == M * N
