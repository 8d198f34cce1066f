"""Warp-written GEMMs (TensorCoreIntrinEmitter) on CUDA, without a GPU: the ldmatrix
addresses deliver exactly the registers of layout/mma_tiling.py (simulated), and the
kernels compile to tensor-core SASS without spills. On a GPU: results vs torch."""
import re

import numpy as np
import pytest

from tilelang.layout.mma import simulate_ldmatrix_x4
from tilelang.layout.mma_tiling import WarpMmaTiling
from tilelang.backend.cuda.ops.warp_mma import ldmatrix_address
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.language.warp_mma_kernels import warp_mma_gemm

FORMS = [("A", False, True, 16), ("A", True, True, 16), ("B", False, True, 16), ("B", False, False, 16),
         ("A", False, True, 8), ("B", False, True, 8)]


@pytest.mark.parametrize("operand,a_trans,b_trans,bits", FORMS)
def test_ldmatrix_addresses_deliver_the_fragment(operand, a_trans, b_trans, bits):
    dt = "float16" if bits == 16 else "int8"
    t = WarpMmaTiling.make(dt, dt, "float32", a_trans, b_trans, 1, 1, 16, 16, 32)
    (_, _), trans = ldmatrix_address(t, operand, 0)

    def addr(lane):  # row start in storage order, column in 16-bit units
        (r, c), _ = ldmatrix_address(t, operand, lane)
        return r, c * bits // 16
    got = simulate_ldmatrix_x4(addr, trans)
    k_inner = not a_trans if operand == "A" else b_trans
    size = t.local_size_a if operand == "A" else t.local_size_b
    for lane in range(32):
        for s in range(size):
            mn, k = t.a_element(lane, 0, 0, s) if operand == "A" else t.b_element(lane, 0, 0, s)
            want = (mn, k) if k_inner else (k, mn)
            r, c16 = got[(lane, s if bits == 16 else s // 2)]
            col = c16 if bits == 16 else 2 * c16 + s % 2
            assert (r, col) == want, (lane, s)


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("a_trans,b_trans", [(False, True), (False, False), (True, True), (True, False)])
def test_fp16_tensor_cores_without_spills(arch, a_trans, b_trans):
    art = build(warp_mma_gemm(a_trans=a_trans, b_trans=b_trans), arch)
    ops = sass_ops(art)
    # per k-step: 2x2 atoms of two m16n8k16 each (the K loop may be unrolled further)
    assert ops["HMMA"] > 0 and ops["HMMA"] % 8 == 0 and ops["LDSM"] > 0, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops
    assert "tl::WarpMma16n8<half, float>" in art.source


@needs_sass
@pytest.mark.parametrize("dtype,accum,arch,op", [("int8", "int32", "sm_80", "IMMA"),
                                                 ("bfloat16", "float32", "sm_80", "HMMA"),
                                                 ("float16", "float16", "sm_80", "HMMA"),
                                                 ("float8_e4m3fn", "float32", "sm_90a", "HMMA")])
def test_other_types(dtype, accum, arch, op):
    art = build(warp_mma_gemm(dtype=dtype, accum=accum, out=accum, chunk=64), arch)
    ops = sass_ops(art)
    assert ops[op] > 0 and ops["LDSM"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0, ops


@needs_sass
@pytest.mark.parametrize("store", ["2d", "global"])
def test_store_forms_compile(store):
    art = build(warp_mma_gemm(store=store), "sm_90a")
    ops = sass_ops(art)
    assert ops["HMMA"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0, ops
    if store == "global":   # straight from registers to C, no shared staging
        assert "C[" in art.source and "Cs" not in art.source


@needs_sass
def test_mma_atoms_compile_like_mma():
    # mma_atom(i, j) for every (i, j): the same tensor-core instructions as mma(), no spills
    whole, atoms = (sass_ops(build(warp_mma_gemm(atoms=a), "sm_90a")) for a in (False, True))
    assert atoms["HMMA"] == whole["HMMA"] > 0 and atoms["LDL"] == 0 and atoms["STL"] == 0, (whole, atoms)


@needs_nvrtc
def test_narrow_atoms_load_element_wise():
    art = build(warp_mma_gemm(M=128, N=96, K=64, wct=24, store="2d"), "sm_80")
    assert "ldmatrix_x4_to(B_local" not in art.source.replace("Bl", "B_local")
    assert "tl::ldmatrix_x4_to(Al" in art.source


@needs_nvrtc
def test_register_arrays_are_cleared_by_every_thread():
    art = build(warp_mma_gemm(), "sm_80")
    # T.clear of a per-thread array: all 32 slots in every thread, not split over threads
    assert re.search(r"for \(int (\w+) = 0; \1 < 32; \+\+\1\) \{\s*Cl\[\1\] = 0.0f;", art.source)


@pytest.mark.gpu
@pytest.mark.parametrize("a_trans,b_trans,atoms", [(False, True, False), (True, False, False), (False, True, True)])
def test_gpu_matches_torch(a_trans, b_trans, atoms):
    import torch
    import tilelang
    M, N, K = 256, 256, 128
    k = tilelang.compile(warp_mma_gemm(M, N, K, a_trans=a_trans, b_trans=b_trans, atoms=atoms), target="cuda")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    k(a.T.contiguous() if a_trans else a, b.T.contiguous() if b_trans else b, c)
    torch.testing.assert_close(c, (a.float() @ b.float()), rtol=1e-2, atol=1e-2)
    assert np.isfinite(c.cpu().numpy()).all()
