"""ops/mma.py + plan/kernel.py: an mma.sync gemm reads a shared tile that a wgmma gemm of
the same kernel gives wgmma's swizzled layout (ldmatrix through tl::tile_offset, mma.h),
so the wgmma gemm keeps its form. Before, every gemm sharing a tile with a gemm that has no
wgmma form fell back to mma.sync (the FlashAttention backward: 3 of its 5 products). The
tile may be a strip tile of its buffer (whole 64-column strips, as the published sparse
MLA backward reads `Q_shared[:, :512]` and `Q_shared[:, 512:]` in its 32-row dKV gemms):
before, those two blocked every wgmma gemm of that kernel."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.plan.plan_kernels import plan_kernels, kernel_plan
from tests.backend.cuda.plan.test_plan_kernels import _launch, _lower_to
from tests.backend.cuda.conftest import needs_sass

INCLUDE = pathlib.Path(__file__).resolve().parents[4] / "tilelang/backend/cuda/include/tl_cuda"


def _fn(text, name, param):
    return re.search(r"template <int %s[^>]*> TL_DEVICE int %s\(.*?\n}\n" % (param, name), text, re.S).group(0)


@pytest.mark.parametrize("sw,rows,cols", [(128, 64, 128), (128, 32, 64), (64, 128, 64), (32, 64, 32)])
def test_tile_offset_is_the_swizzled_layout(tmp_path, sw, rows, cols):
    """tile_offset<SW>(r, c, rows * SW / 2) is tl::sw{SW}<rows>(r, c) (what the copies into
    the tile and the wgmma descriptors use); SW = 0 is row-major with the given stride."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    swz = (INCLUDE / "async.h").read_text()
    fns = [_fn(swz, n, "R") for n in ("sw128", "sw64", "sw32")] + [_fn((INCLUDE / "mma.h").read_text(), "tile_offset", "SW")]
    body = (f"for (int r = 0; r < {rows}; ++r) for (int c = 0; c < {cols}; ++c) "
            f"printf(\"%d %d %d \", tl::tile_offset<{sw}>(r, c, {rows * sw // 2}), tl::sw{sw}<{rows}>(r, c), "
            f"tl::tile_offset<0>(r, c, {cols + 8}));")
    src = tmp_path / "t.cpp"
    src.write_text("#include <cstdio>\n#define TL_DEVICE inline\nnamespace tl {\n" + "".join(fns) +
                   "}\nint main() {\n" + body + "\n}\n")
    subprocess.run([cxx, "-std=c++17", "-O1", "-o", str(tmp_path / "t"), str(src)], check=True)
    out = [int(x) for x in subprocess.run([str(tmp_path / "t")], check=True, capture_output=True,
                                          text=True).stdout.split()]
    got, want, flat = out[0::3], out[1::3], out[2::3]
    assert got == want
    assert flat == [r * (cols + 8) + c for r in range(rows) for c in range(cols)]


def shared_tile_gemms(operand, trans):
    """C1 = A B on wgmma (64 x 64 x 64, one warpgroup), then a second gemm with no wgmma
    form (16 columns or 16 rows) reading A's tile (operand "A") or B's (operand "B"),
    transposed or not."""
    f16, f32 = "float16", "float32"
    if operand == "A":
        c2 = (64, 16)
        other = (64, 16)          # E: K x N
    else:
        c2 = (16, 64)
        other = (16, 64)          # F: M x K

    @T.prim_func
    def two_gemms(A: T.Tensor((64, 64), f16), B: T.Tensor((64, 64), f16), X: T.Tensor(other, f16),
                  C1: T.Tensor((64, 64), f32), C2: T.Tensor(c2, f32)):
        with T.Kernel(1, threads=128) as _:
            a_s = T.alloc_shared((64, 64), f16)
            b_s = T.alloc_shared((64, 64), f16)
            x_s = T.alloc_shared(other, f16)
            c1 = T.alloc_fragment((64, 64), f32)
            c2f = T.alloc_fragment(c2, f32)
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.copy(X, x_s)
            T.clear(c1)
            T.clear(c2f)
            T.gemm(a_s, b_s, c1)
            if operand == "A":
                T.gemm(a_s, x_s, c2f, transpose_A=trans)
            else:
                T.gemm(x_s, b_s, c2f, transpose_B=trans)
            T.copy(c1, C1)
            T.copy(c2f, C2)
    return two_gemms


COMBOS = [("A", False), ("A", True), ("B", False), ("B", True)]


@pytest.mark.parametrize("operand,trans", COMBOS)
def test_the_wgmma_gemm_keeps_its_form(operand, trans):
    _, after, _ = _lower_to(shared_tile_gemms(operand, trans), plan_kernels)
    launch = _launch(after)
    plan = kernel_plan(launch)
    g1, g2 = [], []
    walk(launch.body, lambda n: (g1 if not g1 else g2).append(n) if isinstance(n, TO.Gemm) else None)
    assert plan.gemms[id(g1[0])].kind == "wgmma"
    assert plan.gemms[id(g2[0])].kind == "mma"
    shared = g2[0].A.buffer if operand == "A" else g2[0].B.buffer
    assert plan.placements[id(shared)].swizzle == 128


@pytest.mark.gpu
@pytest.mark.parametrize("operand,trans", COMBOS)
def test_mma_reading_a_swizzled_tile_matches_torch(operand, trans):
    import torch
    import tilelang
    kern = tilelang.compile(shared_tile_gemms(operand, trans), out_idx=[3, 4], target="cuda")
    src = kern.get_kernel_source()
    assert re.search(r"tl::wgmma_(gemm_ss|ss_issue)<", src) and re.search(r"tl::gemm_ss<[^>]*, (128, 0|0, 128)>", src), src
    torch.manual_seed(0)
    a, b = (torch.randn(64, 64, device="cuda", dtype=torch.float16) for _ in range(2))
    x = torch.randn(*((64, 16) if operand == "A" else (16, 64)), device="cuda", dtype=torch.float16)
    c1, c2 = kern(a, b, x)
    torch.testing.assert_close(c1, a.float() @ b.float(), rtol=1e-2, atol=1e-2)
    if operand == "A":
        ref = (a.float().T if trans else a.float()) @ x.float()
    else:
        ref = x.float() @ (b.float().T if trans else b.float())
    torch.testing.assert_close(c2, ref, rtol=1e-2, atol=1e-2)


def test_tile_step_is_tile_offset(tmp_path):
    """gemm_ss addresses an ldmatrix row as tile_step(lane's tile_offset, r0, c0): for every
    swizzle, every lane part (r < 16, c in {0, 8}) and every step (r0 % 8 == 0, c0 % 16 == 0
    inside the tile) it is tile_offset(r0 + r, c0 + c)."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    mma = (INCLUDE / "mma.h").read_text()
    fns = [_fn(mma, "tile_offset", "SW"), _fn(mma, "tile_step", "SW")]
    body = ("int bad = 0, n = 0;\n"
            "for (int sw : {0, 32, 64, 128}) for (int rows : {16, 32, 64}) for (int cols : {64, 128, 192}) {\n"
            "  const int ld = sw ? rows * sw / 2 : cols + 8;\n"
            "  for (int r = 0; r < 16; ++r) for (int c = 0; c < 16; c += 8)\n"
            "    for (int r0 = 0; r0 + r < rows; r0 += 8) for (int c0 = 0; c0 + c < cols; c0 += 16) {\n"
            "      int t, want, got;\n"
            "      switch (sw) {\n"
            "#define CASE(S) case S: t = tl::tile_offset<S>(r, c, ld); want = tl::tile_offset<S>(r0 + r, c0 + c, ld); "
            "got = tl::tile_step<S>(t, r0, c0, ld); break;\n"
            "        CASE(0) CASE(32) CASE(64) CASE(128)\n"
            "      }\n"
            "      ++n; bad += got != want;\n"
            "    }\n"
            "}\n"
            "printf(\"%d %d\", n, bad);")
    src = tmp_path / "t.cpp"
    src.write_text("#include <cstdio>\n#include <initializer_list>\n#define TL_DEVICE inline\nnamespace tl {\n" + "".join(fns) +
                   "}\nint main() {\n" + body + "\n}\n")
    subprocess.run([cxx, "-std=c++17", "-O1", "-o", str(tmp_path / "t"), str(src)], check=True)
    n, bad = (int(x) for x in subprocess.run([str(tmp_path / "t")], check=True, capture_output=True,
                                             text=True).stdout.split())
    assert n > 10000 and bad == 0


DQ, DT = 128, 64   # a row of Q: two 64-column strips of "latent", one of "rope"


def strip_tile_dkv(nblk):
    """The sparse MLA backward's shape of computation, small: S[b] = Q KV[b]^T over Q's two
    column ranges (wgmma, 64 rows), dKV[b] = dP[b]^T Q over the same ranges (32 rows: no
    wgmma form, mma.sync reads Q's strip tiles in wgmma's swizzle)."""
    dt = "bfloat16"

    @T.prim_func
    def main(Q: T.Tensor((64, DQ + DT), dt), KV: T.Tensor((nblk, 32, DQ + DT), dt),
             dP: T.Tensor((nblk, 64, 32), dt), S: T.Tensor((nblk, 64, 32), "float32"),
             dKV: T.Tensor((nblk, 32, DQ + DT), "float32")):
        with T.Kernel(1, threads=128):
            Q_s = T.alloc_shared((64, DQ + DT), dt)
            KV_s = T.alloc_shared((32, DQ), dt)
            KVt_s = T.alloc_shared((32, DT), dt)
            dP_s = T.alloc_shared((64, 32), dt)
            acc_p = T.alloc_fragment((64, 32), "float32")
            acc_dkv = T.alloc_fragment((32, DQ), "float32")
            acc_dkv_t = T.alloc_fragment((32, DT), "float32")
            T.copy(Q, Q_s)
            for b in T.serial(nblk):
                T.copy(KV[b, :, :DQ], KV_s)
                T.copy(KV[b, :, DQ:], KVt_s)
                T.copy(dP[b, :, :], dP_s)
                T.gemm(Q_s[:, :DQ], KV_s, acc_p, transpose_B=True, clear_accum=True)
                T.gemm(Q_s[:, DQ:], KVt_s, acc_p, transpose_B=True)
                T.copy(acc_p, S[b, :, :])
                T.gemm(dP_s, Q_s[:, :DQ], acc_dkv, transpose_A=True, clear_accum=True)
                T.gemm(dP_s, Q_s[:, DQ:], acc_dkv_t, transpose_A=True, clear_accum=True)
                T.copy(acc_dkv, dKV[b, :, :DQ])
                T.copy(acc_dkv_t, dKV[b, :, DQ:])
    return main


def _strip_plan():
    _, after, _ = _lower_to(strip_tile_dkv(2), plan_kernels)
    launch = _launch(after)
    plan = kernel_plan(launch)
    gemms = []
    walk(launch.body, lambda n: gemms.append(n) if isinstance(n, TO.Gemm) else None)
    return plan, gemms


def test_mma_reads_strip_tiles_and_the_wgmma_gemms_keep_their_form():
    plan, gemms = _strip_plan()
    assert [plan.gemms[id(g)].kind for g in gemms] == ["wgmma", "wgmma", "mma", "mma"]
    assert plan.placements[id(gemms[0].A.buffer)].swizzle == 128


def test_switched_off_every_gemm_sharing_the_tile_runs_mma(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_MMA_SWIZZLED", "0")
    plan, gemms = _strip_plan()
    assert [plan.gemms[id(g)].kind for g in gemms] == ["mma"] * 4
    assert plan.placements[id(gemms[0].A.buffer)].swizzle == 0


@needs_sass
def test_strip_tile_code_and_sass():
    """ldmatrix reads Q_s's strips from their first element with the strip stride (64 rows of
    64 columns: 4096), the rope strip 2 strips on; HGMMA for S, HMMA for dKV, no spills."""
    from tests.backend.cuda.helpers import build, sass_ops
    art = build(strip_tile_dkv(2))
    src = art.source
    assert "tl::gemm_ss<32, 128, 64, 1, 4, true, false, 0, 128>(dP_s + 0, 40, Q_s, 4096, acc_dkv, tl_tid);" in src, src
    assert "tl::gemm_ss<32, 64, 64, 1, 4, true, false, 0, 128>(dP_s + 0, 40, Q_s + 8192, 4096, acc_dkv_t, tl_tid);" in src
    ops = sass_ops(art)
    # per iteration: S over K = 128 + 64 (12 k16 steps of m64n32); dKV 32 x 192 x 64 on 4 warps
    assert ops["HGMMA"] == 12 and ops["HMMA"] > 0, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


def _run_strip(target, nblk=2):
    import torch
    dev = "cuda" if target == "cuda" else "cpu"
    kern = tilelang.compile(strip_tile_dkv(nblk), target=target)
    torch.manual_seed(0)
    q = torch.randn(64, DQ + DT, device=dev).to(torch.bfloat16)
    kv = torch.randn(nblk, 32, DQ + DT, device=dev).to(torch.bfloat16)
    dp = torch.randn(nblk, 64, 32, device=dev).to(torch.bfloat16)
    s = torch.empty(nblk, 64, 32, device=dev)
    dkv = torch.empty(nblk, 32, DQ + DT, device=dev)
    kern(q, kv, dp, s, dkv)
    torch.testing.assert_close(s, torch.einsum("md,bnd->bmn", q.float(), kv.float()), rtol=1e-3, atol=1e-2)
    torch.testing.assert_close(dkv, torch.einsum("bmn,md->bnd", dp.float(), q.float()), rtol=1e-3, atol=1e-2)


def test_strip_tile_kernel_on_the_cpu_matches_torch():
    pytest.importorskip("torch")
    _run_strip("cpu")


@pytest.mark.gpu
def test_strip_tile_kernel_matches_torch():
    _run_strip("cuda", nblk=3)


_EXAMPLES = os.environ.get("TL_PUB_EXAMPLES", os.path.join(os.path.dirname(__file__), *[".."] * 4, ".pub", "examples"))
_MLA_BWD = os.path.join(_EXAMPLES, "deepseek_v32", "sparse_mla_bwd.py")


@pytest.mark.gpu
@pytest.mark.skipif(not os.path.exists(_MLA_BWD), reason="the published examples are not here (TL_PUB_EXAMPLES)")
def test_published_sparse_mla_bwd_against_its_reference(monkeypatch):
    """The published sparse MLA backward (4 products on wgmma, 4 on mma.sync reading Q's
    strips in wgmma's swizzle), H = 64 as in the regression suite, fewer queries."""
    pytest.importorskip("triton")   # the example's utils
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cuda")   # (the test session's default is the CPU)
    monkeypatch.syspath_prepend(os.path.dirname(_MLA_BWD))
    import importlib
    m = importlib.import_module("sparse_mla_bwd")
    m.test_sparse_mla_bwd(B=1, S=128, SKV=256, H=64, HKV=1, DQKV=576, DV=512, topk=128, check_correctness=True)
