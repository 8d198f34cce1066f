"""Describe where a puzzle's output is wrong: how many elements, the first wrong indices, and
which output tiles (the tile a block writes) they fall in, with hints for the usual patterns
(nothing written, only the ragged edge wrong, off-by-one tiles)."""
from __future__ import annotations

import numpy as np


def wrong_mask(got, expected, atol, rtol):
    """Elements outside tolerance; NaN (the checker's "never written" fill) always counts."""
    got = got.astype(np.float64)
    return ~np.isclose(got, expected, atol=atol, rtol=rtol, equal_nan=False)


def tile_of(index, tile):
    return tuple(i // t if t else 0 for i, t in zip(index, tile))


def tile_extent(tile_idx, tile, shape):
    """Human text for the index ranges one tile covers, e.g. `rows 32..63, cols 0..31`."""
    parts = []
    for d, (ti, t, n) in enumerate(zip(tile_idx, tile, shape)):
        lo, hi = (ti * t, min((ti + 1) * t, n) - 1) if t else (0, n - 1)
        parts.append(f"{lo}..{hi}")
    return "[" + ", ".join(parts) + "]"


def describe(name, got, expected, tile, atol, rtol, show=5):
    """Lines of text about what is wrong (empty when the output is right)."""
    bad = wrong_mask(got, expected, atol, rtol)
    n_bad = int(bad.sum())
    if n_bad == 0:
        return []
    tile = tuple(t if t else 0 for t in tile)
    shape = expected.shape
    lines = [f"{n_bad} of {bad.size} elements of {name} are wrong ({100.0 * n_bad / bad.size:.1f}%)"]
    unwritten = np.isnan(got.astype(np.float64)) & ~np.isnan(expected)
    idx = np.argwhere(bad)
    for ix in idx[:show]:
        ix = tuple(int(i) for i in ix)
        g, e = got[ix], expected[ix]
        what = "never written" if unwritten[ix] else f"{float(g):.6g}"
        lines.append(f"  {name}[{', '.join(map(str, ix))}] = {what}, expected {float(e):.6g}  "
                     f"(output tile {tile_of(ix, tile)} covering {tile_extent(tile_of(ix, tile), tile, shape)})")
    if n_bad > show:
        lines.append(f"  ... and {n_bad - show} more")
    tiles = sorted({tile_of(tuple(int(i) for i in ix), tile) for ix in idx})
    grid = tuple(-(-n // t) if t else 1 for n, t in zip(shape, tile))
    n_tiles = int(np.prod(grid))
    shown = ", ".join(str(t) for t in tiles[:8]) + (", ..." if len(tiles) > 8 else "")
    lines.append(f"  wrong elements fall in {len(tiles)} of the {n_tiles} output tiles "
                 f"(tile shape {tuple(t or n for t, n in zip(tile, shape))}, grid {grid}): {shown}")
    lines += hints(got, expected, bad, unwritten, tiles, grid, tile, shape, atol, rtol)
    return lines


def hints(got, expected, bad, unwritten, tiles, grid, tile, shape, atol, rtol):
    out = []
    shifted = shift_hints(got, expected, bad, tile, atol, rtol)
    out += shifted
    if unwritten.any():
        n = int(unwritten.sum())
        out.append(f"  hint: {n} elements were never written: does the grid cover the whole output "
                   f"(T.ceildiv of each size by its tile), and does each block store its whole tile?")
    for d, (t, g, n) in enumerate(zip(tile, grid, shape)):
        if not t or g < 2 or len(tiles) == 0:
            continue
        if all(ti[d] == g - 1 for ti in tiles) and n % t:
            out.append(f"  hint: only the last tile along dimension {d} is wrong, the partial one "
                       f"({n} is not a multiple of {t}): check how you handle the ragged edge")
        if all(ti[d] == 0 for ti in tiles) and not bad.all():
            out.append(f"  hint: only the first tile along dimension {d} is wrong: check the block's "
                       f"offset (block index times tile size)")
    if bad.all() and not out:
        out.append("  hint: every element is wrong; compare your formula with the docstring's definition")
    return out


def shift_hints(got, expected, bad, tile, atol, rtol):
    """An output written one tile away from where it belongs (an off-by-one in a block's
    offset): the wrong elements hold the values of the neighbouring tile."""
    out = []
    got = got.astype(np.float64)
    for d, t in enumerate(tile):
        n = expected.shape[d]
        if not t or n <= t:
            continue
        for sign, word in ((1, "forward"), (-1, "backward")):
            # got[i + sign*t] == expected[i] for the wrong elements that have such a neighbour
            src = [slice(None)] * expected.ndim
            dst = [slice(None)] * expected.ndim
            src[d], dst[d] = (slice(0, n - t), slice(t, n)) if sign > 0 else (slice(t, n), slice(0, n - t))
            moved = np.isclose(got[tuple(dst)], expected[tuple(src)], atol=atol, rtol=rtol)
            wrong_there = bad[tuple(dst)]
            if wrong_there.sum() and (moved & wrong_there).sum() >= 0.9 * wrong_there.sum():
                out.append(f"  hint: the output is shifted {word} by one tile ({t}) along dimension {d}: "
                           f"each block writes its tile where the {'next' if sign > 0 else 'previous'} block's "
                           f"belongs — an off-by-one in the block offset")
    return out
