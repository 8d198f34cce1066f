"""Lowering a document's kernels for the target (no GPU, no NVRTC): hover's layouts from
the CUDA backend's kernel plan, lowering errors as diagnostics, the CPU target."""
import pytest

from tilelang.lsp.analysis import analyze
from tilelang.lsp.layouts import lower_kernels, parse_target_name, thread_map
from tests.lsp.test_analysis import GEMM, PATH


def test_target_names():
    assert parse_target_name(None) == ("cuda", "sm_90a")
    assert parse_target_name("cpu") == ("cpu", None)
    assert parse_target_name("sm_80") == ("cuda", "sm_80")
    assert parse_target_name("cuda -arch=sm_89") == ("cuda", "sm_89")
    with pytest.raises(ValueError, match="target must be"):
        parse_target_name("rocm")


def test_gemm_layouts_on_sm_80():
    an = analyze(GEMM, PATH)
    lo = lower_kernels(an.funcs, GEMM, PATH, "sm_80")
    assert lo.diagnostics == []
    [lay] = lo.layouts
    assert lay["A_shared"].startswith("On sm_80: shared memory at byte offset 0, 2 pipeline stages")
    assert "rows padded: strides [40, 1]" in lay["A_shared"]
    acc = lay["C_local"]
    assert "`tl::MmaAccLayout<128, 128, 2, 2>`" in acc and "128 registers per thread of 128" in acc
    # the mma.sync accumulator: lane 1 holds columns 2, 3 of row 0; rows 8 apart in registers 2, 3
    assert "t1   r0→(0, 2) r1→(0, 3) r2→(8, 2) r3→(8, 3)" in acc


def test_thread_map_follows_the_layout():
    from tilelang.backend.cuda.layout.fragment import AccLayout, RowLayout
    lay = AccLayout(64, 64, 4, 1)
    text = "\n".join(thread_map(lay, threads=(5,), regs=2))
    assert f"r0→({lay.row(5, 0)}, {lay.col(5, 0)})" in text and "…" in text
    assert "t0   r0→(0) r1→(8)" in "\n".join(thread_map(RowLayout(64, 4), threads=(0,)))


def test_lowering_error_is_a_diagnostic():
    """Shared memory beyond the device: only the CUDA plan knows (tracing accepts it)."""
    doc = GEMM.replace("T.clear(C_local)", "T.clear(C_local)\n            Big = T.alloc_shared((512, 1024), 'float32')"
                                           "\n            T.clear(Big)")
    an = analyze(doc, PATH)
    assert an.diagnostics == []
    lo = lower_kernels(an.funcs, doc, PATH, "sm_90a")
    [d] = [d for d in lo.diagnostics if d.severity == "error"]
    assert "shared memory" in d.message and "Big" in d.message
    assert 7 <= d.range.line <= 21, d
    # what the planner gave up to try to fit it: warnings at the kernel
    notes = [d.message for d in lo.diagnostics if d.severity == "warning"]
    assert any("pipeline stages capped at 1" in m for m in notes), notes


def test_cpu_target_lowers_without_layouts():
    an = analyze(GEMM, PATH)
    lo = lower_kernels(an.funcs, GEMM, PATH, "cpu")
    assert lo.diagnostics == [] and lo.layouts == [{}]
