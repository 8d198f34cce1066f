"""`python -m tilelang.tools.pass_viewer script.py`: every kernel the script compiles
gets a page of its pass pipeline, the kernel cache notwithstanding."""
import json
import re
import sys

import pytest

from tilelang.tools import pass_viewer

SCRIPT = '''
import sys
import tilelang
import tilelang.language as T

@T.prim_func
def scale(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
    with T.Kernel(2, threads=128) as bx:
        for i in T.Parallel(128):
            B[bx * 128 + i] = A[bx * 128 + i] * float(sys.argv[1])

if __name__ == "__main__":
    tilelang.compile(scale, target="cpu")
    sys.exit(0)
'''


def test_script_pages_and_index(tmp_path, capsys):
    script = tmp_path / "my_kernel.py"
    script.write_text(SCRIPT)
    argv = list(sys.argv)
    assert pass_viewer.main(["-o", str(tmp_path / "out"), str(script), "2.5"]) == 0
    assert sys.argv == argv
    out = capsys.readouterr().out
    page = tmp_path / "out" / "scale.html"
    assert str(page) in out
    text = page.read_text()
    data = json.loads(re.search(r'id="trace-data">(.*?)</script>', text, re.S).group(1).replace("<\\/", "</"))
    names = [p["name"] for p in data["pages"]]
    assert names[0] == "input" and names[-1] == "cpp_source" and "lower_tile_ops" in names
    assert "2.5" in data["pages"][0]["text"]          # the script ran with its arguments
    assert "scale.html" in (tmp_path / "out" / "index.html").read_text()


def test_missing_script_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no_such.py"):
        pass_viewer.run_script(str(tmp_path / "no_such.py"))
