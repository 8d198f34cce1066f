"""Reference solutions of the puzzles, checked in CI (`python -m tilelang.puzzles verify`)."""
