"""TileLang puzzles: ten exercises of rising difficulty, from a tile copy to a GEMM with 4-bit
weights, each checked against a numpy reference on random ragged shapes. They run on the CPU
backend (any laptop) and on a GPU when torch sees one.

    python -m tilelang.puzzles list
    python -m tilelang.puzzles show 3
    python -m tilelang.puzzles start 3          # copies the exercise to ./p03_outer_add.py
    python -m tilelang.puzzles check 3          # checks that copy (or --file PATH)
"""
import os

from tilelang.puzzles.catalog import PUZZLES, Puzzle, get

HERE = os.path.dirname(os.path.abspath(__file__))


def exercise_path(puzzle: Puzzle) -> str:
    return os.path.join(HERE, "exercises", puzzle.filename)


def solution_path(puzzle: Puzzle) -> str:
    return os.path.join(HERE, "solutions", puzzle.filename)


__all__ = ["PUZZLES", "Puzzle", "get", "exercise_path", "solution_path"]
