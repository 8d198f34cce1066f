"""A real editor: headless Neovim's built-in LSP client starts `python -m tilelang.lsp`,
attaches it to a document with a shape error and receives the diagnostic at the right line
(tests/lsp/nvim_init.lua writes it to a file). Skipped where `nvim` is not installed
(`.ci/run` installs Debian's neovim 0.7.2)."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("pygls")
NVIM = shutil.which("nvim")
HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed")
def test_neovim_receives_a_diagnostic(tmp_path):
    from tests.lsp.test_analysis import GEMM
    doc = tmp_path / "kernel.py"
    text = GEMM.replace("T.copy(A[by * block_M, k * block_K], A_shared)", "T.copy(A, A_shared)")
    doc.write_text(text)
    out = tmp_path / "diagnostic.txt"
    root = str(HERE.parents[1])
    env = dict(os.environ, TL_NVIM_DOC=str(doc), TL_NVIM_OUT=str(out), TL_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
               XDG_CONFIG_HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path))
    subprocess.run([NVIM, "--headless", "-n", "-i", "NONE", "-u", str(HERE / "nvim_init.lua")], env=env,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120,
                   cwd=tmp_path)
    assert out.exists(), "Neovim received no diagnostic"
    line, col, severity, message = out.read_text().split(":", 3)
    assert (int(line), int(col), int(severity)) == (15, text.splitlines()[15].index("T.copy"), 1)
    assert message.startswith("T.copy shapes do not match")
