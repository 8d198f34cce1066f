"""The lower trace shows the CUDA backend's decisions: a plan page per kernel (buffer
placements, how each T.gemm runs, pipelines, notes), then the generated source, its PTX
and its SASS."""
import os

from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build
from tests.language.test_gemm_fp8 import fp8_gemm


@needs_nvrtc
def test_trace_ends_with_the_plan_and_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path))
    build(fp8_gemm(256, 256, 256, out="float32"), "sm_90a")
    pages = sorted(os.listdir(tmp_path))
    plan = [p for p in pages if "_cuda_plan_" in p]
    assert len(plan) == 1 and pages[-3].endswith("_cuda_source.cu"), pages
    assert pages[-2].endswith("_ptx.ptx") and pages[-1].endswith("_sass.sass"), pages
    text = (tmp_path / plan[0]).read_text()
    assert "As" in text and "shared @" in text and "3 stages" in text
    assert "wgmma m64n128k32 e4m3 x e4m3, 2 slabs per warpgroup, A from shared" in text, text
    assert "registers (acc): tl::MmaAccLayout<128, 128, 4, 1>" in text
    assert "__global__" in (tmp_path / pages[-3]).read_text()
    assert ".entry" in (tmp_path / pages[-2]).read_text()
