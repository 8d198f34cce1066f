"""Every register layout of the CUDA backend is a `tilelang.layout.Fragment`: its
`.fragment()` places each element on the thread and register that the specification
below (the mma accumulator numbering of the PTX ISA over the backend's warp grid; the
chunked thread tiles of layout/tile.py) and the device header `tl::MmaAccLayout` /
`tl::MmaRowLayout` / `tl::MmaColLayout` that the generated code indexes with give, element
by element."""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tilelang.backend.cuda.layout.fragment import AccLayout, RowLayout
from tilelang.backend.cuda.layout.tile import ThreadTile, TileRows, TileCols, Scalar

ACC = [AccLayout(64, 64, 2, 2), AccLayout(128, 128, 4, 2), AccLayout(64, 256, 4, 1), AccLayout(128, 64, 8, 1),
       AccLayout(64, 128, 4, 2, wg_cols=True), AccLayout(64, 64, 1, 4), AccLayout(32, 32, 1, 1)]
ROWS = [a.row_layout() for a in ACC]
COLS = [a.col_layout() for a in ACC]
TILES = [ThreadTile(128, 128, 128, 8), ThreadTile(8, 64, 128, 4), ThreadTile(1, 1024, 256, 4),
         ThreadTile(16, 512, 128, 4), ThreadTile(4, 32, 64, 2)]


# the specification: register r of thread t holds ...
def acc_row(L, t, r):
    w, lane = t >> 5, t & 31
    wr = w % L.WM if L.wg_cols else w // L.WN
    return wr * (L.M // L.WM) + ((r >> 2) // L.NI) * 16 + (lane >> 2) + ((r >> 1) & 1) * 8


def acc_col(L, t, r):
    w, lane = t >> 5, t & 31
    wc = w // L.WM if L.wg_cols else w % L.WN
    return wc * (L.N // L.WN) + ((r >> 2) % L.NI) * 8 + (lane & 3) * 2 + (r & 1)


def acc_row_slot(L, r):
    return ((r >> 2) // L.NI) * 2 + ((r >> 1) & 1)


def rows_row(R, t, s):
    wr = (t >> 5) % R.WM if R.wg_cols else (t >> 5) // R.WN
    return wr * (R.M // R.WM) + (s >> 1) * 16 + ((t & 31) >> 2) + (s & 1) * 8


def acc_col_slot(L, r):
    return ((r >> 2) % L.NI) * 2 + (r & 1)


def cols_col(C, t, s):
    wc = (t >> 5) // C.WM if C.wg_cols else (t >> 5) % C.WN
    return wc * (C.N // C.WN) + (s >> 1) * 8 + (t & 3) * 2 + (s & 1)


def tile_flat(L, t, r):       # chunk r // V of thread t, lane r % V
    return ((r // L.V) * L.T + t) * L.V + r % L.V


def tile_rows_row(L, t, s):
    return (s * (L.G // L.V) * L.T * L.V + t * L.V) // L.N


def tile_cols_col(L, t, s):
    return (((s // L.V) * L.T + t) * L.V) % L.N + s % L.V


def _grid(nthreads, regs):
    return np.meshgrid(np.arange(nthreads), np.arange(regs), indexing="ij")


def _holds(frag, t, r, *idx):
    """Element idx (arrays) is held by thread t (one of its replicas) at slot r, for
    every entry; and no register of any thread is used twice or left over."""
    assert frag.is_bijective_up_to_replication()
    thr = frag.thread_table()[(slice(None),) + idx]
    assert (thr == t).any(axis=0).all()
    assert (frag.slot_table()[idx] == r).all()
    assert frag.thread_extent * frag.num_slots == t.size


@pytest.mark.parametrize("lay", ACC, ids=str)
def test_acc_layout_is_its_fragment(lay):
    t, r = _grid(lay.WM * lay.WN * 32, lay.regs)
    _holds(lay.fragment(), t, r, acc_row(lay, t, r), acc_col(lay, t, r))
    assert (lay.row(t, r) == acc_row(lay, t, r)).all() and (lay.col(t, r) == acc_col(lay, t, r)).all()


@pytest.mark.parametrize("lay", ROWS, ids=str)
def test_row_layout_is_its_fragment(lay):
    t, s = _grid(lay.WM * lay.WN * 32, lay.regs)
    _holds(lay.fragment(), t, s, rows_row(lay, t, s))


@pytest.mark.parametrize("acc", ACC, ids=str)
def test_row_slot_of_accumulator_register(acc):
    """The row statistic of accumulator register r sits in RowLayout slot row_slot(r),
    on the same thread."""
    t, r = _grid(acc.WM * acc.WN * 32, acc.regs)
    rows = acc.row_layout().fragment()
    i = acc_row(acc, t, r)
    assert (rows.slot_table()[i] == acc_row_slot(acc, r)).all()
    assert all(acc.row_slot(x) == acc_row_slot(acc, x) for x in range(acc.regs))
    assert (rows.thread_table()[:, i] == t).any(axis=0).all()


@pytest.mark.parametrize("lay", COLS, ids=str)
def test_col_layout_is_its_fragment(lay):
    t, s = _grid(lay.WM * lay.WN * 32, lay.regs)
    _holds(lay.fragment(), t, s, cols_col(lay, t, s))
    assert (lay.col(t, s) == cols_col(lay, t, s)).all()


@pytest.mark.parametrize("acc", ACC, ids=str)
def test_col_slot_of_accumulator_register(acc):
    """The column value of accumulator register r sits in ColLayout slot col_slot(r),
    on the same thread (every thread holding a column's elements holds its value)."""
    t, r = _grid(acc.WM * acc.WN * 32, acc.regs)
    cols = acc.col_layout().fragment()
    j = acc_col(acc, t, r)
    assert (cols.slot_table()[j] == acc_col_slot(acc, r)).all()
    assert all(acc.col_slot(x) == acc_col_slot(acc, x) for x in range(acc.regs))
    assert (cols.thread_table()[:, j] == t).any(axis=0).all()


@pytest.mark.parametrize("tile", TILES, ids=str)
def test_thread_tile_rows_cols_are_their_fragments(tile):
    assert ThreadTile.fits(tile.M, tile.N, tile.T, tile.V)
    t, r = _grid(tile.T, tile.regs)
    _holds(tile.fragment(), t, r, tile_flat(tile, t, r) // tile.N, tile_flat(tile, t, r) % tile.N)
    rows, cols = TileRows(tile), TileCols(tile)
    t, s = _grid(tile.T, rows.regs)
    _holds(rows.fragment(), t, s, tile_rows_row(tile, t, s))
    t, s = _grid(tile.T, cols.regs)
    _holds(cols.fragment(), t, s, tile_cols_col(tile, t, s))
    for th in (0, tile.T - 1):   # the rows / columns a thread's tile registers touch
        held = [(tile.row(th, x), tile.col(th, x)) for x in range(tile.regs)]
        assert {rows.row(th, x) for x in range(rows.regs)} == {i for i, _ in held}
        assert {cols.col(th, x) for x in range(cols.regs)} == {j for _, j in held}


def test_scalar_is_fully_replicated():
    f = Scalar().fragment(128)
    assert f.replicate_size == 128 and sorted(f.thread_table()[:, 0]) == list(range(128))


HEADER = Path(__file__).resolve().parents[4] / "tilelang/backend/cuda/include/tl_cuda/mma.h"


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler")
def test_device_header_formulas_equal_the_fragments(tmp_path):
    """tl::MmaAccLayout / tl::MmaRowLayout / tl::MmaColLayout, compiled for the host, give
    the same element for every (thread, register) as the Fragments."""
    text = HEADER.read_text()
    structs = re.search(r"template <int M, int N, int WM, int WN, bool WGC = false> struct MmaAccLayout.*?"
                        r"struct MmaColLayout \{.*?\n\};", text, re.S).group(0)
    calls = []
    for a in ACC:
        t = f"{a.M}, {a.N}, {a.WM}, {a.WN}, {'true' if a.wg_cols else 'false'}"
        r = f"{a.M}, {a.WM}, {a.WN}, {'true' if a.wg_cols else 'false'}"
        c = f"{a.N}, {a.WM}, {a.WN}, {'true' if a.wg_cols else 'false'}"
        calls.append(f"dump<MmaAccLayout<{t}>, MmaRowLayout<{r}>, MmaColLayout<{c}>>({a.WM * a.WN * 32});")
    src = ("#include <cstdio>\n#define TL_DEVICE inline\n" + structs +
           "\ntemplate <class L, class R, class C> void dump(int n) {\n"
           "  for (int t = 0; t < n; ++t) for (int r = 0; r < L::REGS; ++r)\n"
           "    std::printf(\"%d %d %d %d %d %d\\n\", L::row(t, r), L::col(t, r), L::row_slot(r), R::row(t, L::row_slot(r)),\n"
           "                L::col_slot(r), C::col(t, L::col_slot(r)));\n"
           "  std::printf(\"end\\n\");\n}\nint main() {\n" + "\n".join(calls) + "\n}\n")
    (tmp_path / "h.cpp").write_text(src)
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(tmp_path / "h"), str(tmp_path / "h.cpp")], check=True)
    out = subprocess.run([str(tmp_path / "h")], check=True, capture_output=True, text=True).stdout
    blocks = out.split("end\n")
    for a, block in zip(ACC, blocks):
        vals = np.array([ln.split() for ln in block.strip().splitlines()], dtype=np.int64)
        n = a.WM * a.WN * 32
        assert vals.shape == (n * a.regs, 6)
        t, r = _grid(n, a.regs)
        row, col, slot, row_of_slot, cslot, col_of_slot = (vals[:, k].reshape(n, a.regs) for k in range(6))
        _holds(a.fragment(), t, r, row, col)
        rows = a.row_layout().fragment()
        assert (rows.slot_table()[row] == slot).all() and (row_of_slot == row).all()
        cols = a.col_layout().fragment()
        assert (cols.slot_table()[col] == cslot).all() and (col_of_slot == col).all()
