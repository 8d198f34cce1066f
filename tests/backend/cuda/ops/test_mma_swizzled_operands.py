"""ops/mma.py + plan/kernel.py: an mma.sync gemm reads a shared tile that a wgmma gemm of
the same kernel gives wgmma's swizzled layout (ldmatrix through tl::tile_offset, mma.h),
so the wgmma gemm keeps its form. Before, every gemm sharing a tile with a gemm that has no
wgmma form fell back to mma.sync (the FlashAttention backward: 3 of its 5 products)."""
import pathlib
import re
import shutil
import subprocess

import pytest

import tilelang.language as T
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.plan.plan_kernels import plan_kernels, kernel_plan
from tests.backend.cuda.plan.test_plan_kernels import _launch, _lower_to

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
    assert "tl::wgmma_gemm_ss<" in src and re.search(r"tl::gemm_ss<[^>]*, (128, 0|0, 128)>", src), src
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
