"""Every reference solution passes its own check on the CPU backend (one compile per puzzle:
the sizes are symbolic; two random ragged shapes each)."""
import pytest

from tilelang.puzzles import PUZZLES, solution_path
from tilelang.puzzles.checker import check


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: f"{p.number:02d}_{p.slug}")
def test_reference_solution_passes(puzzle):
    lines = []
    assert check(puzzle, solution_path(puzzle), device="cpu", shapes=2, out=lines.append), "\n".join(lines)
    assert sum("ok" in line for line in lines) == 2
