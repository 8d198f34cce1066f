"""The checker on learners' mistakes: a kernel off by one tile (reported with the tile), a file
that does not import, a missing function, a missing file."""
from tilelang.puzzles import get, solution_path
from tilelang.puzzles.checker import check


def _check(number, path):
    lines = []
    ok = check(get(number), str(path), device="cpu", shapes=1, out=lines.append)
    return ok, "\n".join(lines)


def test_off_by_one_tile_is_reported_with_the_tile(tmp_path):
    with open(solution_path(get(2))) as f:
        src = f.read()
    wrong = src.replace("T.copy(a, C[bx * block_N])", "T.copy(a, C[(bx + 1) * block_N])")
    assert wrong != src
    path = tmp_path / "p02_vector_add.py"
    path.write_text(wrong)
    ok, text = _check(2, path)
    assert not ok
    assert "WRONG" in text and "output tile (0,) covering [0..63]" in text
    assert "shifted forward by one tile (64) along dimension 0" in text
    assert "never written" in text


def test_file_that_does_not_import_points_at_its_line(tmp_path):
    path = tmp_path / "p01_copy.py"
    path.write_text("import tilelang.language as T\n\nx = 1 / 0\n")
    ok, text = _check(1, path)
    assert not ok and "importing" in text and "line 3" in text and "ZeroDivisionError" in text


def test_missing_function_and_missing_file(tmp_path):
    path = tmp_path / "p01_copy.py"
    path.write_text("def copy_kernel(N):\n    pass\n")
    ok, text = _check(1, path)
    assert not ok and "defines no `copy`" in text
    ok, text = _check(1, tmp_path / "nope.py")
    assert not ok and "does not exist" in text and "tilelang.puzzles start 1" in text


def test_factory_that_returns_nothing(tmp_path):
    path = tmp_path / "p01_copy.py"
    path.write_text("def copy(N, block_N=64, dtype='float32'):\n    pass\n")
    ok, text = _check(1, path)
    assert not ok and "must return the @T.prim_func" in text and "NoneType" in text
