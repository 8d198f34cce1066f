"""plan/kernel.py honours T.annotate_layout on shared buffers: row-major, padded, the
32/64/128-byte XOR swizzles and an arbitrary permutation each compile for sm_90a, and the
plan report (the lower trace's plan page) says which layout the buffer has, how wide its
copies' vectors are, and how a gemm reading it runs. The GPU test checks every one
against torch; the CPU backend ignores the annotations (they only place elements)."""
import os

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.layout import (Layout, Fragment, make_linear_layout, make_padded_layout,
                             make_quarter_bank_swizzled_layout, make_half_bank_swizzled_layout,
                             make_full_bank_swizzled_layout)
from tests.backend.cuda.conftest import needs_nvrtc

N = 64


def _permutation(s):
    return Layout((N, N), lambda i, j: [(i + j) % N, (j * 5 + 3) % N])


LAYOUTS = {
    "row_major": (make_linear_layout, "annotated row-major layout, strides [64, 1]", "vector x8"),
    "padded": (lambda s: make_padded_layout(N, N, 16), "annotated strided layout, strides [72, 1]", "vector x8"),
    "swizzle32": (make_quarter_bank_swizzled_layout, "annotated 32B swizzle", "vector x8"),
    "swizzle64": (make_half_bank_swizzled_layout, "annotated 64B swizzle", "vector x8"),
    "swizzle128": (make_full_bank_swizzled_layout, "sw128, annotated 128B swizzle (tl::sw128)", "vector x8"),
    "permutation": (_permutation, "annotated layout Layout([64, 64]", "scalar"),
}


def kernel(make, gemm=False):
    """s = A through the layout; D = s transposed (an element loop across its layout);
    with `gemm`, C = s @ B."""
    @T.prim_func
    def k(A: T.Tensor((N, N), "float16"), B: T.Tensor((N, N), "float16"), C: T.Tensor((N, N), "float32"),
          D: T.Tensor((N, N), "float16")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((N, N), "float16")
            b = T.alloc_shared((N, N), "float16")
            c = T.alloc_fragment((N, N), "float32")
            T.annotate_layout({s: make(s)})
            T.copy(A, s)
            T.copy(B, b)
            if gemm:
                T.gemm(s, b, c, clear_accum=True)
                T.copy(c, C)
            for i, j in T.Parallel(N, N):
                D[i, j] = s[j, i]
    return k


def plan_page(func, tmp_path, monkeypatch, arch="sm_90a"):
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path))
    art = tilelang.lower(func, target={"kind": "cuda", "arch": arch})
    (page,) = [p for p in os.listdir(tmp_path) if "_cuda_plan_" in p]
    return (tmp_path / page).read_text(), art


def _line(text, start):
    return next(ln for ln in text.splitlines() if ln.strip().startswith(start))


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_the_plan_shows_the_annotated_layout(name, tmp_path, monkeypatch):
    make, shown, copy_in = LAYOUTS[name]
    text, art = plan_page(kernel(make), tmp_path, monkeypatch)
    assert shown in _line(text, "s ")
    assert copy_in in _line(text, "A -> s")
    if name in ("swizzle32", "swizzle64", "permutation"):   # accesses through the layout's index
        assert " ^ " in art.kernel_source or "& 63" in art.kernel_source


@pytest.mark.parametrize("name,gemm_form,note", [
    ("padded", "mma.sync m16n8k16", None),          # ldmatrix reads strided 16-byte rows
    ("row_major", "mma.sync m16n8k16", None),       # wgmma reads sw128 tiles only
    ("permutation", "SIMT loop", "T.gemm reading s through the annotated layout: SIMT loop"),
    ("swizzle128", "wgmma m64n64k16", None),
])
def test_a_gemm_reads_the_annotated_layout(name, gemm_form, note, tmp_path, monkeypatch):
    text, _ = plan_page(kernel(LAYOUTS[name][0], gemm=True), tmp_path, monkeypatch)
    assert gemm_form in _line(text, "T.gemm(s, b, c)")
    assert (note is None) == ("note: T.gemm reading" not in text)
    if note:
        assert f"note: {note}" in text


def test_a_public_swizzle_on_a_wgmma_operand_gives_way(tmp_path, monkeypatch):
    text, _ = plan_page(kernel(make_half_bank_swizzled_layout, gemm=True), tmp_path, monkeypatch)
    assert "wgmma" in _line(text, "T.gemm(s, b, c)")
    assert "sw128, annotated 64B swizzle replaced by the operand layout of its tensor-core gemm" in _line(text, "s ")


def _acc_kernel(frag_of):
    @T.prim_func
    def k(A: T.Tensor((N, N), "float16"), B: T.Tensor((N, N), "float16"), C: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((N, N), "float16")
            b = T.alloc_shared((N, N), "float16")
            c = T.alloc_fragment((N, N), "float32")
            T.annotate_layout({c: frag_of(c)})
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c, C)
    return k


def test_an_annotated_fragment_equal_to_the_accumulator_is_honoured(tmp_path, monkeypatch):
    from tilelang.backend.cuda.layout.fragment import AccLayout
    text, _ = plan_page(_acc_kernel(lambda c: AccLayout(64, 64, 4, 1).fragment()), tmp_path, monkeypatch)
    assert "tl::MmaAccLayout<64, 64, 4, 1>, annotated Fragment (line" in _line(text, "c ")
    assert "honoured" in _line(text, "c ") and "not honoured" not in text


def test_another_annotated_fragment_is_reported_not_honoured(tmp_path, monkeypatch):
    other = lambda c: Fragment((N, N), forward_thread_fn=lambda i, j: (i * N + j) // 32 % 128,   # noqa: E731
                               forward_index_fn=lambda i, j: (i * N + j) // 4096 * 32 + j % 32)
    text, _ = plan_page(_acc_kernel(other), tmp_path, monkeypatch)
    assert "annotated Fragment (line" in _line(text, "c ") and "not honoured" in _line(text, "c ")


@needs_nvrtc
@pytest.mark.parametrize("name", ["swizzle64", "permutation"])
def test_compiles_for_sm_90a(name):
    from tests.backend.cuda.helpers import build
    assert build(kernel(LAYOUTS[name][0], gemm=True)).binary


def pipelined(make, K=256):
    """D = the sum over K tiles of A's tile transposed, the tiles copied into the annotated
    buffer by a 2-stage pipeline."""
    @T.prim_func
    def k(A: T.Tensor((N, K), "float16"), D: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((N, N), "float16")
            acc = T.alloc_fragment((N, N), "float32")
            T.annotate_layout({s: make(s)})
            T.clear(acc)
            for ko in T.Pipelined(K // N, num_stages=2):
                T.copy(A[0, ko * N], s)
                for i, j in T.Parallel(N, N):
                    acc[i, j] += s[j, i]
            T.copy(acc, D)
    return k


def test_cp_async_stages_through_a_swizzle(tmp_path, monkeypatch):
    text, _ = plan_page(pipelined(make_half_bank_swizzled_layout), tmp_path, monkeypatch)
    assert "2 stages of 8192 B, annotated 64B swizzle" in _line(text, "s ")
    assert "cp.async x8 (16 B)" in _line(text, "A -> s")
    text, _ = plan_page(pipelined(_permutation), tmp_path / "p", monkeypatch)
    assert "no vector accesses" in _line(text, "s ") and "scalar" in _line(text, "A -> s")


def _reference(a, b):
    return (a.astype(np.float32) @ b.astype(np.float32)), a.T.copy()


def test_cpu_results_do_not_depend_on_annotations():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((N, N)).astype(np.float16) for _ in range(2))
    c, d = np.zeros((N, N), np.float32), np.zeros((N, N), np.float16)
    tilelang.compile(kernel(_permutation, gemm=True), target="cpu")(a, b, c, d)
    want_c, want_d = _reference(a, b)
    np.testing.assert_allclose(c, want_c, rtol=1e-2, atol=1e-2)
    assert (d == want_d).all()


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_pipelined_annotated_layouts_gpu(name):
    import torch
    k = tilelang.compile(pipelined(LAYOUTS[name][0]), target="cuda")
    a = torch.randn(N, 4 * N, device="cuda", dtype=torch.float16)
    d = torch.empty(N, N, device="cuda", dtype=torch.float32)
    k(a, d)
    want = sum(a[:, q * N:(q + 1) * N].float().T for q in range(4))
    torch.testing.assert_close(d, want, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("gemm", [False, True])
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_annotated_layouts_gpu(name, gemm):
    import torch
    k = tilelang.compile(kernel(LAYOUTS[name][0], gemm=gemm), target="cuda")
    a = torch.randn(N, N, device="cuda", dtype=torch.float16)
    b = torch.randn(N, N, device="cuda", dtype=torch.float16)
    c = torch.zeros(N, N, device="cuda", dtype=torch.float32)
    d = torch.empty(N, N, device="cuda", dtype=torch.float16)
    k(a, b, c, d)
    assert torch.equal(d, a.T)
    if gemm:
        torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-2, atol=1e-2)


def _placements(func, arch="sm_90a"):
    """{buffer name: (buffer, Placement)} of the plan of the (one) kernel of `func`."""
    from tilelang.backend.cuda.plan.kernel import plan_kernel
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    launches, decls = [], []
    walk(func.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    walk(func.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    plan = plan_kernel(launches[0], arch)
    return {b.name: (b, plan.placements[id(b)]) for b in decls if id(b) in plan.placements}


@pytest.mark.parametrize("arch,want", [("sm_90a", "sw128"), ("sm_80", "padded")])
def test_every_shared_placement_is_a_public_layout(arch, want):
    """The compiler's own choices are tilelang.layout Layouts too: wgmma operands the
    128-byte swizzle (TMA- and wgmma-compatible), mma.sync operands padded rows."""
    from tilelang.backend.cuda.layout.shared import placed_layout
    from tilelang.layout.swizzle import SwizzleMode, detect_swizzle_mode, is_tma_wgmma_compatible
    planned = _placements(_plain_gemm(), arch)
    for name in ("s", "b"):
        buf, p = planned[name]
        lay = placed_layout(buf, p)
        if want == "sw128":
            assert detect_swizzle_mode(lay, buf) is SwizzleMode.SWIZZLE_128B and is_tma_wgmma_compatible(lay, buf)
        else:
            assert np.array_equal(lay.offsets(), make_padded_layout(N, N, 16).offsets())
    buf, p = _placements(kernel(_permutation))["s"]
    assert placed_layout(buf, p).is_equal(_permutation(buf))


def _plain_gemm():
    @T.prim_func
    def k(A: T.Tensor((N, N), "float16"), B: T.Tensor((N, N), "float16"), C: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((N, N), "float16")
            b = T.alloc_shared((N, N), "float16")
            c = T.alloc_fragment((N, N), "float32")
            T.copy(A, s)
            T.copy(B, b)
            T.gemm(s, b, c, clear_accum=True)
            T.copy(c, C)
    return k
