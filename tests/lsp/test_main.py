"""`python -m tilelang.lsp --check FILE`: what the server would show, without an editor."""
import pytest

from tilelang.lsp.__main__ import main
from tests.lsp.test_analysis import GEMM


def test_check_prints_diagnostics_hints_and_layouts(tmp_path, capsys):
    doc = tmp_path / "k.py"
    doc.write_text(GEMM.replace("T.copy(A[by * block_M, k * block_K], A_shared)", "T.copy(A, A_shared)"))
    with pytest.raises(SystemExit) as e:
        main(["--check", str(doc)])
    out = capsys.readouterr().out
    assert e.value.code == 1 and f"{doc}:16:17: error: T.copy shapes do not match" in out
    doc.write_text(GEMM)
    with pytest.raises(SystemExit) as e:
        main(["--check", str(doc), "--layouts", "--target", "sm_80"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "line   13  C_local: fragment float32[128, 128]" in out and "MmaAccLayout<128, 128, 2, 2>" in out
    assert "line   15  T.Pipelined: 4 iterations, 2 stages" in out and "ms of CPU (best of 5)" in out


def test_bad_target_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--target", "rocm"])
    assert e.value.code == 2 and "--target: target must be" in capsys.readouterr().err
