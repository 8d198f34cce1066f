"""The README's tour runs as written (on the GPU when there is one, else on the CPU) and its
checks hold: the fused ReLU GEMM against torch."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_tour_runs_as_written(tmp_path, capsys):
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    code = re.search(r"## A tour of the language\n\n```python\n(.*?)```", text, re.S).group(1)
    path = tmp_path / "tour.py"      # kernels must live in a file (their source is read)
    path.write_text(code)
    exec(compile(code, str(path), "exec"), {"__name__": "tour"})
    assert "gemm" in capsys.readouterr().out
