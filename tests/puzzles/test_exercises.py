"""The exercises: each defines the function its puzzle checks, with the solution's signature,
explains itself, and fails the check with a message saying what to do."""
import ast
import inspect
import importlib

import pytest

from tilelang.puzzles import PUZZLES, exercise_path
from tilelang.puzzles.checker import check


def _entry(puzzle, package):
    module = importlib.import_module(f"tilelang.puzzles.{package}.{puzzle.filename[:-3]}")
    return getattr(module, puzzle.entry)


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: f"{p.number:02d}_{p.slug}")
def test_exercise_matches_solution_signature_and_explains_itself(puzzle):
    stub, solution = _entry(puzzle, "exercises"), _entry(puzzle, "solutions")
    assert inspect.signature(stub) == inspect.signature(solution)
    assert set(puzzle.sizes) | set(puzzle.params) <= set(inspect.signature(stub).parameters)
    with open(exercise_path(puzzle)) as f:
        doc = ast.get_docstring(ast.parse(f.read()))
    assert doc.startswith(f"Puzzle {puzzle.number}:")
    assert f"python -m tilelang.puzzles check {puzzle.number}" in doc
    assert stub.__doc__ and "@T.prim_func" in stub.__doc__


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: f"{p.number:02d}_{p.slug}")
def test_unmodified_exercise_fails_with_a_helpful_message(puzzle):
    lines = []
    assert not check(puzzle, exercise_path(puzzle), device="cpu", out=lines.append)
    text = "\n".join(lines)
    assert f"puzzle {puzzle.number} is not solved yet" in text
    assert f"`{puzzle.entry}` still raises NotImplementedError" in text
    assert f"python -m tilelang.puzzles show {puzzle.number}" in text
