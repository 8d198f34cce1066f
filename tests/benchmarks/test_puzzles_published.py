"""benchmarks/puzzles_published.py on a stand-in checkout (common/ and ans/ scripts that print
what the published checker prints): a script passes only when it exits 0 and every
"Results match" line it printed says True."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _driver():
    spec = importlib.util.spec_from_file_location("puzzles_published", os.path.join(ROOT, "benchmarks", "puzzles_published.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_table_and_verdicts(tmp_path, capsys):
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "__init__.py").write_text("")
    (tmp_path / "common" / "utils.py").write_text("def check(ok):\n    print('Results match:', ok)\n")
    ans = tmp_path / "ans"
    ans.mkdir()
    (ans / "01-good.py").write_text("from common.utils import check\ncheck(True)\ncheck(True)\n")
    (ans / "02-wrong.py").write_text("from common.utils import check\ncheck(True)\ncheck(False)\n")
    (ans / "03-crash.py").write_text("from common.utils import check\ncheck(True)\nraise SystemExit(3)\n")
    (ans / "04-silent.py").write_text("print('no check at all')\n")
    rc = _driver().main([str(tmp_path), "--log", str(tmp_path / "log.txt")])
    out = capsys.readouterr().out
    assert rc == 1 and "1/4 pass" in out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.startswith("0")}
    assert rows == {"01-good.py": "pass", "02-wrong.py": "FAIL", "03-crash.py": "FAIL", "04-silent.py": "FAIL"}
    assert "===== ans/02-wrong.py" in (tmp_path / "log.txt").read_text()
    assert _driver().main([str(tmp_path), "--only", "01"]) == 0
