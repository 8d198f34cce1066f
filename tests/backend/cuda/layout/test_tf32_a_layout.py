"""The register A operand of the TF32 mma.sync (layout/fragment.py `Tf32ALayout`,
`tl::gemm_rs_tf32`) and the M x 4 tiles on its threads (`Tf32ColsLayout`): DeepSeek mHC's
pre block widens a bf16 tile to tf32, sums the squares of each row four columns at a time
(`sqrsum_part[i, j] += x_frag[i, jj * 4 + j] ** 2`) and multiplies the tile by a tf32
weight tile. The tile is the gemm's register A fragment (before: staged through shared
memory, one store, one barrier and one ldmatrix per 16 x 8 atom more), the partial sums
live on the threads that hold those columns, and the row sums come out in the row layout
after a quad exchange. Checked here: the layouts against the PTX fragment specification
and the device header, the plan's choices and fallbacks, the code and its SASS."""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.backend.cuda.layout.test_tiles_beside_shared_gemm_operands import gemm_sqrsum
from tilelang.backend.cuda.layout.fragment import Tf32ALayout, Tf32ColsLayout, RowLayout

LAYOUTS = [Tf32ALayout(32, 128, 2, 2), Tf32ALayout(64, 32, 4, 1), Tf32ALayout(64, 64, 2, 2), Tf32ALayout(32, 16, 1, 4)]


def spec_a(L, t, r):
    """PTX ISA, mma.m16n8k8 .tf32 A: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
    of atom (mi, ki), register (mi * K / 8 + ki) * 4 + a; warp w at grid row w // WN."""
    lane, wr = t & 31, (t >> 5) // L.WN
    a, atom = r & 3, r >> 2
    mi, ki = atom // L.KI, atom % L.KI
    row = wr * (L.M // L.WM) + mi * 16 + (lane >> 2) + (a & 1) * 8
    col = ki * 8 + (lane & 3) + (a >> 1) * 4
    return row, col


def _grid(n, regs):
    return np.meshgrid(np.arange(n), np.arange(regs), indexing="ij")


@pytest.mark.parametrize("L", LAYOUTS, ids=str)
def test_a_layout_is_the_ptx_fragment_replicated_over_warp_columns(L):
    n = L.WM * L.WN * 32
    t, r = _grid(n, L.regs)
    row, col = spec_a(L, t, r)
    f = L.fragment()
    assert f.is_bijective_up_to_replication() and f.replicate_size == L.WN
    assert (f.slot_table()[row, col] == r).all()
    assert (f.thread_table()[:, row, col] == t).any(axis=0).all()


@pytest.mark.parametrize("L", LAYOUTS, ids=str)
def test_cols_tile_sits_on_the_threads_of_every_k_atom(L):
    """Element (i, j) of the M x 4 tile is on the threads holding A[i, 4 c + j] for every c,
    at the slot whose rows are RowLayout's; slot_of names A's register for it."""
    C = Tf32ColsLayout(L.M, L.WM, L.WN)
    n = L.WM * L.WN * 32
    fc = C.fragment()
    assert fc.is_bijective_up_to_replication() and fc.replicate_size == L.WN
    rows = RowLayout(L.M, L.WM, L.WN).fragment()
    a_rows, a_cols = spec_a(L, *_grid(n, L.regs))
    held = {}   # (thread, slot) -> (i, j)
    for i in range(L.M):
        for j in range(4):
            for t in fc.thread_table()[:, i, j]:
                held[int(t), int(fc.slot_table()[i, j])] = (i, j)
    assert len(held) == n * C.regs
    regs = {(s, e): eval(L.slot_of(s, e).replace("/", "//"))   # the C expression on ints
            for s in range(C.regs) for e in range(0, L.N, 4)}
    for (t, s), (i, j) in held.items():
        assert rows.slot_table()[i] == s and (rows.thread_table()[:, i] == t).any()
        for e in range(0, L.N, 4):
            assert (a_rows[t, regs[s, e]], a_cols[t, regs[s, e]]) == (i, e + j), (t, s, e)


HEADER = Path(__file__).resolve().parents[4] / "tilelang/backend/cuda/include/tl_cuda/mma.h"


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler")
def test_device_header_formulas_equal_the_fragments(tmp_path):
    text = HEADER.read_text()
    structs = re.search(r"template <int M, int K, int WM, int WN> struct MmaTf32ALayout.*?"
                        r"struct MmaTf32ColsLayout \{.*?\n\};", text, re.S).group(0)
    calls = [f"dump<MmaTf32ALayout<{L.M}, {L.N}, {L.WM}, {L.WN}>, MmaTf32ColsLayout<{L.M}, {L.WM}, {L.WN}>>"
             f"({L.WM * L.WN * 32});" for L in LAYOUTS]
    src = ("#include <cstdio>\n#define TL_DEVICE inline\n" + structs +
           "\ntemplate <class A, class C> void dump(int n) {\n"
           "  for (int t = 0; t < n; ++t) for (int r = 0; r < A::REGS; ++r)\n"
           "    std::printf(\"%d %d\\n\", A::row(t, r), A::col(t, r));\n"
           "  std::printf(\"cols\\n\");\n"
           "  for (int t = 0; t < n; ++t) for (int s = 0; s < C::REGS; ++s)\n"
           "    std::printf(\"%d %d\\n\", C::row(t, s), C::col(t, s));\n"
           "  std::printf(\"end\\n\");\n}\nint main() {\n" + "\n".join(calls) + "\n}\n")
    (tmp_path / "h.cpp").write_text(src)
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(tmp_path / "h"), str(tmp_path / "h.cpp")], check=True)
    out = subprocess.run([str(tmp_path / "h")], check=True, capture_output=True, text=True).stdout
    for L, block in zip(LAYOUTS, out.split("end\n")):
        a_txt, c_txt = block.strip().split("cols\n")
        n = L.WM * L.WN * 32
        a = np.array([x.split() for x in a_txt.strip().splitlines()], dtype=np.int64).reshape(n, L.regs, 2)
        t, r = _grid(n, L.regs)
        row, col = spec_a(L, t, r)
        assert (a[..., 0] == row).all() and (a[..., 1] == col).all()
        C = Tf32ColsLayout(L.M, L.WM, L.WN)
        c = np.array([x.split() for x in c_txt.strip().splitlines()], dtype=np.int64).reshape(n, C.regs, 2)
        f = C.fragment()
        t, s = _grid(n, C.regs)
        assert (f.slot_table()[c[..., 0], c[..., 1]] == s).all()
        assert (f.thread_table()[:, c[..., 0], c[..., 1]] == t).any(axis=0).all()


def _plan(func, arch="sm_90a", wgmma_rs=True):
    from tilelang.backend.cuda.plan.kernel import plan_kernel
    from tilelang.backend.cuda.options import CudaOptions
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    import dataclasses
    launches, decls = [], []
    walk(func.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    walk(func.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    opts = dataclasses.replace(CudaOptions.from_config(None, arch), wgmma_rs=wgmma_rs)
    plan = plan_kernel(launches[0], arch, opts)
    return plan, {b.name: plan.placements.get(id(b)) for b in decls}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_plan_keeps_the_mhc_tile_in_registers(arch):
    plan, p = _plan(gemm_sqrsum(), arch)
    (cfg,) = plan.gemms.values()
    assert cfg.tf32 and cfg.a_regs and (cfg.M, cfg.N, cfg.K, cfg.WM, cfg.WN) == (32, 32, 128, 2, 2)
    assert p["x_frag"].acc == Tf32ALayout(32, 128, 2, 2) and p["x_frag_16"].acc == Tf32ALayout(32, 128, 2, 2)
    assert p["sqrsum_part"].acc == Tf32ColsLayout(32, 2, 2)
    assert p["sqrsum_l"].acc == RowLayout(32, 2, 2)
    assert p["x_smem_16"].kind == "smem" and p["fn_smem"].kind == "smem"


def test_plan_switch_and_transposed_a_keep_the_shared_operand():
    plan, p = _plan(gemm_sqrsum(), wgmma_rs=False)
    assert not next(iter(plan.gemms.values())).a_regs and p["x_frag"].kind == "smem"

    @T.prim_func
    def trans_a(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            Af = T.alloc_fragment((64, 64), "float32")
            Bs = T.alloc_shared((64, 64), "float32")
            Cf = T.alloc_fragment((64, 64), "float32")
            T.copy(A, Af)
            T.copy(B, Bs)
            T.clear(Cf)
            T.gemm(Af, Bs, Cf, transpose_A=True)
            T.copy(Cf, C)
    plan, p = _plan(trans_a)
    assert not next(iter(plan.gemms.values())).a_regs and p["Af"].kind == "smem"


def test_a_loop_off_the_residue_form_sends_the_tile_to_shared_memory():
    """A nest reading the A fragment at a column that is not 4 c + j cannot run on its
    threads: the fragment goes to shared memory and the gemm reads it from there."""
    @T.prim_func
    def off(A: T.Tensor((32, 64), "float32"), B: T.Tensor((32, 64), "float32"), C: T.Tensor((32, 32), "float32"),
            S: T.Tensor((32, 4), "float32")):
        with T.Kernel(1, threads=128):
            Af = T.alloc_fragment((32, 64), "float32")
            Bs = T.alloc_shared((32, 64), "float32")
            Cf = T.alloc_fragment((32, 32), "float32")
            part = T.alloc_fragment((32, 4), "float32")
            T.copy(A, Af)
            T.copy(B, Bs)
            T.clear(Cf)
            T.clear(part)
            for q in T.serial(15):
                for i, j in T.Parallel(32, 4):
                    part[i, j] += Af[i, q * 4 + j + 1]
            T.gemm(Af, Bs, Cf, transpose_B=True)
            T.copy(Cf, C)
            T.copy(part, S)
    plan, p = _plan(off)
    assert not next(iter(plan.gemms.values())).a_regs and p["Af"].kind == "smem"


@needs_nvrtc
def test_mhc_gemm_source_reads_a_from_registers():
    src = build(gemm_sqrsum()).source
    assert "tl::gemm_rs_tf32<32, 32, 128, 2, 2, true, 2>(x_frag, " in src
    assert "float x_frag[64];" in src and "float sqrsum_part[2];" in src
    assert "* x_frag = reinterpret_cast" not in src
    # the sum of squares reads A's registers at constants: its k loop is unrolled
    assert re.search(r"#pragma unroll\n\s*for \(int jj = 0; jj < 32; \+\+jj\)", src), src


@needs_sass
def test_mhc_gemm_sass_no_shared_staging_no_spills():
    ops = sass_ops(build(gemm_sqrsum(), "sm_80"))
    assert ops["HMMA"] >= 2 * 16 and ops["LDSM"] > 0, ops      # B through ldmatrix, A from registers
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops
    assert ops["STS"] == 0, ops                                 # no staging store of the widened tile


@pytest.mark.gpu
@pytest.mark.parametrize("num_tokens,hidden,block", [(100, 1280, 256), (64, 512, 128)])
def test_gpu_mhc_gemm_sqrsum_register_a_matches_torch(num_tokens, hidden, block):
    """mHC's gemm + sum of squares at the published block (256 columns, 128 registers of A
    per thread), a partial last token block, against torch."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from tilelang.backend.registry import get_backend, parse_target
    torch.manual_seed(1)
    x = torch.randn(num_tokens, hidden, device="cuda").bfloat16()
    fn = torch.randn(24, hidden, device="cuda") * 1e-2
    out = torch.full((num_tokens, 24), float("nan"), device="cuda")
    sq = torch.full((num_tokens,), float("nan"), device="cuda")
    be = get_backend("cuda")
    art = be.build(gemm_sqrsum(num_tokens=num_tokens, hidden=hidden, hidden_block=block), parse_target("cuda"))
    assert "gemm_rs_tf32" in art.source
    be.load(art)([x, fn, out, sq], (), ())
    torch.cuda.synchronize()
    xf = x.float()
    torch.testing.assert_close(sq, xf.square().sum(-1), rtol=1e-4, atol=1e-3)
    ref = xf.double() @ fn.double().T
    assert ((out.double() - ref).abs().max() / ref.abs().max()).item() < 2e-3     # tf32 products
