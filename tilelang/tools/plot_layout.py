"""`tilelang.tools.plot_layout` (published call shape): a picture of a layout, one cell per
element of the tile.

- a `Fragment`: each cell is coloured by the thread that holds the element (one colour
  per thread) and labelled `T<thread>` / `R<register slot>`; replicated elements list
  every thread that holds a copy.
- a `Layout` (shared memory): each cell is coloured by the shared-memory bank of its
  offset (`element_bytes` per element, 32 banks of 4 bytes: a swizzle shows as the
  banks' diagonal pattern) and labelled with its offset. `view="output"` draws the
  memory side instead: cells in offset order (rows as long as the tile's), labelled with
  the logical index stored there.

Saved as `<save_directory>/<name>.<fmt>` for each of `formats` ("pdf", "png", "svg", a
comma-separated list, or "all"); in an SVG every cell is a group `cell-<row>-<col>`.
Returns the written paths. Needs matplotlib (the `tools` extra)."""
from __future__ import annotations

import colorsys
import os

import numpy as np

BANKS = 32
BANK_BYTES = 4


def plot_layout(layout, save_directory="./tmp", name: str = "layout", colormap: str | None = None,
                verbose: bool = False, formats: str = "pdf", view: str = "input",
                grid_shape: tuple | None = None, element_bytes: int = 2) -> list:
    from tilelang.layout.fragment import Fragment
    from tilelang.layout.layout import Layout
    if isinstance(layout, Fragment):
        cells = _fragment_cells(layout)
        title = (f"Fragment {tuple(int(s) for s in layout.get_input_shape())}: {layout.thread_extent} threads x "
                 f"{layout.num_slots} registers" + (f", {layout.replicate_size} replicas" if layout.replicate_size > 1 else ""))
    elif isinstance(layout, Layout):
        if view not in ("input", "output"):
            raise ValueError(f"plot_layout: view must be 'input' or 'output', got {view!r}")
        cells = _layout_cells(layout, view, element_bytes, colormap)
        title = (f"Layout {tuple(int(s) for s in layout.get_input_shape())} -> offsets, coloured by bank "
                 f"({element_bytes}-byte elements)" if view == "input" else "Layout: memory order, labelled by index")
    else:
        raise TypeError(f"plot_layout expects a tilelang.layout Layout or Fragment, got {type(layout).__name__}")
    colours, labels = cells
    colours, labels = _to_grid(colours, labels, grid_shape)
    if verbose:
        for idx in np.ndindex(labels.shape):
            print(f"{idx} -> {labels[idx]}")
    return _save(_draw(colours, labels, title), save_directory, name, formats)


def thread_colours(n):
    """n distinct colours (RGB floats): hues spread by the golden ratio over three
    saturation/value rings, so neighbouring threads differ; a colour that rounds to
    one already taken (8 bits per channel, as a PNG stores it) moves its hue on."""
    rings = ((0.55, 0.95), (0.35, 0.85), (0.75, 0.75))
    out, taken = [], set()
    for t in range(n):
        h = (t * 0.618033988749895) % 1.0
        sat, val = rings[t % 3]
        while True:
            rgb = colorsys.hsv_to_rgb(h, sat, val)
            key = tuple(round(c * 255) for c in rgb)
            if key not in taken:
                break
            h = (h + 1 / 997) % 1.0
        taken.add(key)
        out.append(tuple(k / 255 for k in key))
    return out


def _fragment_cells(frag):
    threads = frag.thread_table()            # (replicas, *shape)
    slots = np.broadcast_to(frag.slot_table(), threads.shape[1:])
    owners = np.empty(threads.shape[1:], object)
    for idx in np.ndindex(owners.shape):
        owners[idx] = [(int(t), int(slots[idx])) for t in threads[(slice(None),) + idx]]
    return _ownership_cells(owners, frag.thread_extent)


def _ownership_cells(owners, nthreads):
    """Colours and labels of cells given each cell's [(thread, register slot), ...]."""
    palette = thread_colours(nthreads)
    colours = np.ones(owners.shape + (3,), float)
    labels = np.full(owners.shape, "", object)
    for idx in np.ndindex(owners.shape):
        own = owners[idx]
        if not own:
            continue
        ts = [t for t, _ in own]
        colours[idx] = palette[ts[0]]
        who = "T" + ",".join(str(t) for t in ts) if len(ts) <= 2 else f"T{ts[0]}+{len(ts) - 1}"
        labels[idx] = f"{who}\nR{own[0][1]}"
    return colours, labels


def _layout_cells(layout, view, element_bytes, colormap):
    import matplotlib
    offsets = layout.offsets()
    bank = (offsets * element_bytes // BANK_BYTES) % BANKS
    cmap = matplotlib.colormaps[colormap or "Spectral"].resampled(BANKS)
    if view == "input":
        colours = np.array([[cmap(int(b))[:3] for b in row] for row in bank.reshape(-1, bank.shape[-1])])
        colours = colours.reshape(bank.shape + (3,))
        labels = np.vectorize(str, otypes=[object])(offsets)
        return colours, labels
    # output view: memory in offset order, in rows as long as the tile's rows
    flat_off = offsets.ravel()
    size = int(flat_off.max()) + 1
    cols = int(offsets.shape[-1])
    coords = np.stack(np.unravel_index(np.arange(offsets.size), offsets.shape), axis=-1)
    labels = np.full((size,), "", object)
    colours = np.ones((size, 3))
    for k, off in enumerate(flat_off):
        labels[off] = ",".join(str(int(c)) for c in coords[k])
        colours[off] = cmap(int((off * element_bytes // BANK_BYTES) % BANKS))[:3]
    rows = -(-size // cols)
    pad = rows * cols - size
    labels = np.concatenate([labels, np.full((pad,), "", object)]).reshape(rows, cols)
    colours = np.concatenate([colours, np.ones((pad, 3))]).reshape(rows, cols, 3)
    return colours, labels


def _to_grid(colours, labels, grid_shape):
    """2-D: 1-D tiles become one row, leading dimensions of N-D tiles fold into rows."""
    shape = labels.shape
    if grid_shape is not None:
        r, c = (int(x) for x in grid_shape)
        if r * c != labels.size:
            raise ValueError(f"plot_layout: grid_shape {grid_shape} holds {r * c} cells, the layout has {labels.size}")
    elif len(shape) == 1:
        r, c = 1, shape[0]
    else:
        r, c = int(np.prod(shape[:-1])), shape[-1]
    return colours.reshape(r, c, 3), labels.reshape(r, c)


def _draw(colours, labels, title):
    # a Figure of its own (no pyplot): no GUI backend, no global figure state
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    rows, cols = labels.shape
    cell, left, bottom, top = 0.55, 0.45, 0.15, 0.75   # inches; fixed margins: no second (tight) draw
    w, h = max(3.0, cols * cell + left + 0.2), rows * cell + bottom + top
    fig = Figure(figsize=(w, h))
    ax = fig.add_axes((left / w, bottom / h, cols * cell / w, rows * cell / h))
    font = 7 if max(len(str(x)) for x in labels.ravel()) <= 6 else 5
    for i in range(rows):
        for j in range(cols):
            rgb = colours[i, j]
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor=rgb, edgecolor="white", linewidth=0.6, gid=f"cell-{i}-{j}"))
            lum = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
            ax.text(j + 0.5, i + 0.5, labels[i, j], ha="center", va="center", fontsize=font,
                    color="black" if lum > 0.5 else "white")
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks(np.arange(cols) + 0.5, [str(j) for j in range(cols)], fontsize=6)
    ax.set_yticks(np.arange(rows) + 0.5, [str(i) for i in range(rows)], fontsize=6)
    ax.tick_params(length=0)
    ax.xaxis.tick_top()
    for s in ax.spines.values():
        s.set_visible(False)
    ax.set_title(title, fontsize=9, pad=14, loc="left")
    return fig


def _formats(formats):
    if not isinstance(formats, str):
        raise TypeError(f"plot_layout: formats must be a string such as 'png', 'pdf,svg' or 'all', "
                        f"got {type(formats).__name__}")
    f = formats.strip().lower()
    out = ["pdf", "png", "svg"] if f == "all" else [x.strip() for x in f.split(",") if x.strip()]
    bad = [x for x in out if x not in ("pdf", "png", "svg")]
    if bad:
        raise ValueError(f"plot_layout: unknown format(s) {bad}; use pdf, png, svg or all")
    return out


def _save(fig, directory, name, formats):
    from matplotlib import rc_context
    os.makedirs(directory, exist_ok=True)
    paths = []
    for fmt in _formats(formats):
        path = os.path.join(directory, f"{name}.{fmt}")
        with rc_context({"svg.fonttype": "none"}):   # SVG text as text: small files, fast
            fig.savefig(path, dpi=150 if fmt == "png" else None, format=fmt,
                        metadata={"Date": None} if fmt == "svg" else None)
        print(f"Saved {fmt} format into {path}")
        paths.append(path)
    return paths


def plot_kernel_layouts(func, target="cuda -arch=sm_90a", save_directory="./tmp", formats="png",
                        pass_configs=None, element_bytes=None) -> list:
    """Pictures of the layouts the compiler chose for a kernel: every register fragment
    (thread / register of each element) and every shared buffer (banks, swizzle
    included), as `<save_directory>/<kernel>_<buffer>.<fmt>`. `func` is a PrimFunc;
    the kernel is lowered for `target` (no GPU, no NVRTC needed). Returns the paths."""
    from tilelang.engine.lower import lower
    from tilelang.layout import make_full_bank_swizzled_layout, make_linear_layout
    from tilelang.transform.lower_trace import tracing
    with tracing() as traces:
        lower(func, target=target, pass_configs=pass_configs)
    records = [r for t in traces for p in t.pages for r in p.layouts]
    if not records:
        raise ValueError(f"plot_kernel_layouts: the {target!r} backend reported no tile layouts for "
                         f"{getattr(func, 'name', func)!r} (the CUDA backend does)")
    paths = []
    for r in records:
        name = f"{func.name}_{r.name}"
        if r.layout is not None:
            colours, labels = _ownership_cells(_register_owners(r), _thread_count(r))
            title = f"{r.name} {r.shape} {r.dtype}: {r.layout.layout()}"
            colours, labels = _to_grid(colours, labels, None)
            paths += _save(_draw(colours, labels, title), save_directory, name, formats)
        else:
            from tilelang.ir.dtypes import DataType
            rows, cols = int(np.prod(r.shape[:-1])), r.shape[-1]
            lay = (make_full_bank_swizzled_layout((rows, cols), r.dtype) if r.swizzle
                   else make_linear_layout((rows, cols)))
            eb = element_bytes or DataType(r.dtype).itemsize
            colours, labels = _layout_cells(lay, "input", eb, None)
            title = f"{r.name} {r.shape} {r.dtype} in shared memory ({r.swizzle or 'linear'}), coloured by bank"
            paths += _save(_draw(colours, labels, title), save_directory, name, formats)
    return paths


def _thread_count(r):
    lay = r.layout
    if hasattr(lay, "WM"):
        return lay.WM * lay.WN * 32
    return getattr(lay, "T", None) or getattr(getattr(lay, "tile", None), "T", None) or r.threads


def _register_owners(r):
    """[(thread, register)] of every element of a register tile, from its layout's
    row(t, r) / col(t, r) (the Python mirror of the CUDA header)."""
    lay = r.layout
    owners = np.empty(r.shape, object)
    for idx in np.ndindex(r.shape):
        owners[idx] = []
    for t in range(_thread_count(r)):
        for k in range(lay.regs):
            if len(r.shape) == 2:
                idx = (lay.row(t, k), lay.col(t, k))
            elif hasattr(lay, "row"):
                idx = (lay.row(t, k),)
            else:
                idx = (lay.col(t, k),)
            if all(0 <= i < n for i, n in zip(idx, r.shape)):
                owners[idx].append((t, k))
    return owners

