"""`python -m tilelang.puzzles list | show | start | check` (called in-process)."""
import os

from tilelang.puzzles.__main__ import main


def test_list_and_show(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 10 and "Scalar flash attention" in out and "dequant_gemm(M, N, ...)" in out
    assert main(["show", "3"]) == 0
    assert "Puzzle 3: Outer add" in capsys.readouterr().out


def test_start_copies_once_then_check_reports_the_stub(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["start", "1"]) == 0
    assert os.path.exists("p01_copy.py")
    with open("p01_copy.py", "a") as f:
        f.write("# my work\n")
    assert main(["start", "1"]) == 1            # keeps the learner's work
    assert "# my work" in open("p01_copy.py").read()
    capsys.readouterr()
    assert main(["check", "1", "--device", "cpu"]) == 1   # the default file is start's copy
    assert "puzzle 1 is not solved yet" in capsys.readouterr().out


def test_unknown_puzzle_is_a_usage_error(capsys):
    assert main(["show", "11"]) == 2
    assert "no puzzle '11'" in capsys.readouterr().err
