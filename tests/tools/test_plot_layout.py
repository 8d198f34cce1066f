"""plot_layout draws what the layout says: one cell per element, coloured by the owning
thread (Fragment) or the shared-memory bank (Layout); checked in the SVG's structure and
the PNG's pixels."""
import re

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from tilelang.layout import Fragment, make_full_bank_swizzled_layout, make_linear_layout  # noqa: E402
from tilelang.tools import plot_layout  # noqa: E402
from tilelang.tools.plot_layout import thread_colours  # noqa: E402


def _small_fragment():
    # 8 x 8 elements over 32 threads, 2 registers each: thread 4 i + j // 2
    return Fragment((8, 8), forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)


def _svg_cells(path):
    """{(row, col): fill hex} of the cell groups of a plot_layout SVG."""
    text = open(path).read()
    cells = re.findall(r'<g id="cell-(\d+)-(\d+)">\s*<path[^>]*style="fill: (#[0-9a-f]{6})', text)
    return {(int(r), int(c)): fill for r, c, fill in cells}


def _hex(rgb):
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgb)


def test_fragment_svg_has_a_cell_per_element_coloured_by_its_thread(tmp_path):
    frag = _small_fragment()
    (svg,) = plot_layout(frag, str(tmp_path), "frag", formats="svg")
    cells = _svg_cells(svg)
    assert len(cells) == 64
    palette = [_hex(c) for c in thread_colours(32)]
    threads = frag.thread_table()[0]
    for (r, c), fill in cells.items():
        assert fill == palette[threads[r, c]], (r, c)
    assert len(set(cells.values())) == frag.thread_extent == 32
    text = open(svg).read()
    assert "T5" in text and "R1" in text   # labels: thread and register slot


def test_fragment_png_shows_one_colour_per_thread(tmp_path):
    import matplotlib.image as mpimg
    (png,) = plot_layout(_small_fragment(), str(tmp_path), "frag", formats="png")
    im = (mpimg.imread(png)[..., :3] * 255).round().astype(int).reshape(-1, 3)
    colours, counts = np.unique(im, axis=0, return_counts=True)
    big = {tuple(c) for c, n in zip(colours, counts) if n > 0.3 * np.sort(counts)[-2]} - {(255, 255, 255)}
    # every thread's two cells fill a large area in its own colour; antialiasing and text do not
    assert big == {tuple(round(x * 255) for x in c) for c in thread_colours(32)}


def test_swizzled_layout_spreads_a_column_over_the_banks(tmp_path):
    swz = make_full_bank_swizzled_layout((8, 64), "float16")
    (a,) = plot_layout(swz, str(tmp_path), "swz", formats="svg")
    sc = _svg_cells(a)
    assert len(sc) == 8 * 64
    # column 0 of 8 rows: 8 different banks under the swizzle (a linear layout: 1)
    assert len({sc[(r, 0)] for r in range(8)}) == 8
    # a row of 64 half-precision elements is 128 bytes: all 32 banks, two elements per bank
    assert len({sc[(0, c)] for c in range(64)}) == 32
    assert sc[(0, 0)] == sc[(0, 1)] != sc[(0, 2)]


def test_output_view_and_errors(tmp_path):
    lin = make_linear_layout((4, 32))
    (svg,) = plot_layout(lin, str(tmp_path), "out", formats="svg", view="output", element_bytes=4)
    cells = _svg_cells(svg)
    assert len(cells) == 4 * 32
    assert len({cells[(r, 0)] for r in range(4)}) == 1   # linear: a column is one bank (4-way conflict)
    with pytest.raises(TypeError, match="Layout or Fragment"):
        plot_layout(np.zeros(3), str(tmp_path))
    with pytest.raises(ValueError, match="unknown format"):
        plot_layout(lin, str(tmp_path), formats="gif")
    with pytest.raises(ValueError, match="view must be"):
        plot_layout(lin, str(tmp_path), view="sideways")


def test_the_compilers_layouts_of_a_kernel(tmp_path):
    import tilelang.language as T
    from tilelang.tools.plot_layout import plot_kernel_layouts

    @T.prim_func
    def mm(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            As = T.alloc_shared((16, 16), "float16")
            Bs = T.alloc_shared((16, 16), "float16")
            Cl = T.alloc_fragment((16, 16), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.clear(Cl)
            T.gemm(As, Bs, Cl)
            T.copy(Cl, C)

    paths = plot_kernel_layouts(mm, save_directory=str(tmp_path), formats="svg")
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == ["mm_As.svg", "mm_Bs.svg", "mm_Cl.svg"]
    acc = _svg_cells(str(tmp_path / "mm_Cl.svg"))
    # the mma accumulator of one warp: 256 elements, 32 threads x 8 registers, each thread its colour
    assert len(acc) == 256 and len(set(acc.values())) == 32
    assert sorted(list(acc.values()).count(c) for c in set(acc.values())) == [8] * 32
    # the mma.sync accumulator pattern: a thread holds two neighbouring columns of a row
    assert acc[(0, 0)] == acc[(0, 1)] != acc[(0, 2)] and acc[(0, 0)] == acc[(8, 0)]
    assert len(_svg_cells(str(tmp_path / "mm_As.svg"))) == 256
