"""The exercises learners copy (`python -m tilelang.puzzles start N`); each raises NotImplementedError until solved."""
