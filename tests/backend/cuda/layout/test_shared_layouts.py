"""layout/shared.py: what an annotated shared-memory Layout becomes (sw128, strided or
custom), the vector runs a layout keeps, and the located errors for layouts no path
can honour. The compiler's own wgmma/TMA layout is the public 128-byte swizzle Layout,
checked against the device header's tl::sw128."""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.buffer import Buffer
from tilelang.ir.dtypes import as_dtype
from tilelang.ir.errors import TileLangError
from tilelang.layout import (Layout, Fragment, make_linear_layout, make_padded_layout,
                             make_quarter_bank_swizzled_layout, make_half_bank_swizzled_layout,
                             make_full_bank_swizzled_layout)
from tilelang.layout.swizzle import SwizzleMode
from tilelang.backend.cuda.layout.shared import annotated_shared_layout, contiguous_run, sw128_layout


def _shared(shape, dtype, make):
    b = Buffer("s", list(shape), as_dtype(dtype), scope="shared")
    b.layout = make(b)
    return b


def test_row_major_and_padded_layouts_are_strides():
    a = annotated_shared_layout(_shared((64, 64), "float16", make_linear_layout))
    assert (a.kind, a.linear, a.strides, a.size) == ("strided", True, (64, 1), 64 * 64)
    a = annotated_shared_layout(_shared((64, 64), "float16", lambda b: make_padded_layout(64, 64, 16)))
    assert (a.kind, a.linear, a.strides, a.contiguous) == ("strided", False, (72, 1), 8)   # rows start at multiples of 8
    a = annotated_shared_layout(_shared((32, 16), "float32", lambda b: Layout((32, 16), lambda i, j: j * 32 + i)))
    assert (a.kind, a.strides, a.contiguous) == ("strided", (1, 32), 1)   # column-major


def test_the_128_byte_swizzle_of_a_16_bit_tile_is_sw128():
    a = annotated_shared_layout(_shared((64, 128), "bfloat16", make_full_bank_swizzled_layout))
    assert a.kind == "sw128" and a.swizzle is SwizzleMode.SWIZZLE_128B


@pytest.mark.parametrize("make,mode", [(make_quarter_bank_swizzled_layout, SwizzleMode.SWIZZLE_32B),
                                       (make_half_bank_swizzled_layout, SwizzleMode.SWIZZLE_64B)])
def test_narrower_swizzles_are_custom_with_16_byte_runs(make, mode):
    a = annotated_shared_layout(_shared((32, 64), "float16", make))
    assert (a.kind, a.swizzle, a.contiguous, a.strides) == ("custom", mode, 8, (8, 1))
    a = annotated_shared_layout(_shared((32, 64), "float32", make_half_bank_swizzled_layout))
    assert (a.kind, a.contiguous) == ("custom", 4)   # 16 bytes of float32


def test_a_permutation_has_no_vector_runs():
    a = annotated_shared_layout(_shared((64, 64), "float16",
                                        lambda b: Layout((64, 64), lambda i, j: [(i + j) % 64, (j * 5 + 3) % 64])))
    assert (a.kind, a.contiguous, a.strides) == ("custom", 1, (0, 0))


def test_contiguous_run_needs_aligned_consecutive_offsets():
    assert contiguous_run(np.arange(64).reshape(4, 16)) == 16
    assert contiguous_run(np.arange(64).reshape(4, 16) + 2) == 2     # runs start at 2 mod 4
    assert contiguous_run(np.arange(64).reshape(4, 16)[:, ::-1].copy()) == 1
    x = np.arange(64).reshape(4, 16)
    x[:, 4:8] = x[:, 4:8][:, [1, 0, 2, 3]]
    assert contiguous_run(x) == 1
    x = np.arange(64).reshape(4, 16)
    x[:, 4:8], x[:, 8:12] = x[:, 8:12].copy(), x[:, 4:8].copy()
    assert contiguous_run(x) == 4


def test_no_annotation_and_fragments_of_registers():
    assert annotated_shared_layout(Buffer("s", [8, 8], as_dtype("float16"), scope="shared")) is None


def _kernel(make):
    @T.prim_func
    def k(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((16, 16), "float32")
            T.annotate_layout({s: make(s)})   # the line errors point at
            T.copy(A, s)
            T.copy(s, B)
    return k


@pytest.mark.parametrize("make,msg", [
    (lambda s: Layout((16, 8), lambda i, j: i * 8 + j), r"over the shape \[16, 8\], the buffer has the shape \[16, 16\]"),
    (lambda s: Layout((16, 16), lambda i, j: i * 8 + j % 8), r"two elements at one offset"),
    (lambda s: Fragment((16, 16), forward_thread_fn=lambda i, j: j + i % 2 * 16, forward_index_fn=lambda i, j: i // 2),
     r"got a Fragment"),
])
def test_layouts_no_path_can_honour_are_located_errors(make, msg):
    with pytest.raises(TileLangError, match=msg) as err:
        tilelang.lower(_kernel(make), target={"kind": "cuda", "arch": "sm_90a"})
    src = Path(__file__).read_text().splitlines()
    assert "T.annotate_layout" in src[err.value.span.line - 1]
    assert "make_swizzled_layout" in str(err.value)   # the hint names the layouts that work


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler")
def test_sw128_layout_is_the_device_headers_sw128(tmp_path):
    text = (Path(tilelang.__file__).parent / "backend/cuda/include/tl_cuda/async.h").read_text()
    fn = re.search(r"template <int R, int EB = 2> TL_DEVICE int sw128\(int r, int c\) \{.*?\n\}", text, re.S).group(0)
    # 16-bit tiles (sw128<R>) and fp8 ones (sw128<R, 1>: 128-column strips) against the public layout
    src = ("#include <cstdio>\n#define TL_DEVICE inline\n" + fn + "\nint main() {\n"
           "  for (int r = 0; r < 64; ++r) for (int c = 0; c < 128; ++c) std::printf(\"%d\\n\", sw128<64>(r, c));\n"
           "  for (int r = 0; r < 64; ++r) for (int c = 0; c < 256; ++c) std::printf(\"%d\\n\", sw128<64, 1>(r, c));\n}\n")
    (tmp_path / "s.cpp").write_text(src)
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(tmp_path / "s"), str(tmp_path / "s.cpp")], check=True)
    out = np.array(subprocess.run([str(tmp_path / "s")], check=True, capture_output=True, text=True).stdout.split(),
                   dtype=np.int64)
    buf = Buffer("t", [64, 128], as_dtype("float16"), scope="shared")
    assert np.array_equal(sw128_layout(buf).offsets(), out[:64 * 128].reshape(64, 128))
    buf8 = Buffer("t8", [64, 256], as_dtype("float8_e4m3fn"), scope="shared")
    assert np.array_equal(sw128_layout(buf8).offsets(), out[64 * 128:].reshape(64, 256))


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler")
def test_printed_offsets_of_custom_layouts_are_the_layouts(tmp_path):
    """The C index formula the CUDA printer writes for a buffer read through its layout
    (emit/kernel.py `flat`), compiled for the host with the header's floordiv/floormod,
    gives every element the Layout's offset."""
    from tilelang.backend.cuda.emit.expr import ExprPrinter
    from tilelang.backend.cuda.emit.kernel import Names
    from tilelang.ir import expr as E
    layouts = [make_quarter_bank_swizzled_layout(Buffer("a", [32, 64], as_dtype("float16"), scope="shared")),
               make_half_bank_swizzled_layout(Buffer("b", [16, 32], as_dtype("float32"), scope="shared")),
               Layout((64, 64), lambda i, j: [(i + j) % 64, (j * 5 + 3) % 64]),
               Layout((24, 40), lambda i, j: [(i * 7 + j) % 24, (j * 3 + i // 5) % 40])]
    names = Names()
    r, c = E.Var("r"), E.Var("c")
    names.new(r, "r")
    names.new(c, "c")
    printer = ExprPrinter(names, lambda load: None)
    common = (Path(tilelang.__file__).parent / "backend/cuda/include/tl_cuda/common.h").read_text()
    helpers = "\n".join(m.group(0) for m in re.finditer(r"template <class T> TL_DEVICE T floor(div|mod)\(T a, T b\) \{.*?\n\}",
                                                         common, re.S))
    fns = "\n".join(f"int f{k}(int r, int c) {{ return {printer(lay.offset_expr(r, c))}; }}"
                    for k, lay in enumerate(layouts))
    loops = "\n".join(f"  for (int r = 0; r < {lay.input_shape[0]}; ++r) for (int c = 0; c < {lay.input_shape[1]}; ++c) "
                      f"std::printf(\"%d\\n\", f{k}(r, c));" for k, lay in enumerate(layouts))
    src = (f"#include <cstdio>\n#define TL_DEVICE inline\nnamespace tl {{\n{helpers}\n}}\n{fns}\n"
           f"int main() {{\n{loops}\n}}\n")
    (tmp_path / "o.cpp").write_text(src)
    subprocess.run(["g++", "-O1", "-o", str(tmp_path / "o"), str(tmp_path / "o.cpp")], check=True)
    out = np.array(subprocess.run([str(tmp_path / "o")], check=True, capture_output=True, text=True).stdout.split(),
                   dtype=np.int64)
    want = np.concatenate([lay.offsets().ravel() for lay in layouts])
    assert np.array_equal(out, want)


@pytest.mark.parametrize("rows,cols,swizzle_bytes,slabs", [(64, 64, 128, 1), (64, 32, 64, 1), (128, 16, 32, 1),
                                                           (128, 32, 64, 2)])
def test_placed_narrow_swizzles_are_the_headers_layouts(rows, cols, swizzle_bytes, slabs):
    """placed_layout of a sw64 / sw32 (and slab-ordered) wgmma operand is tl::sw<W> of
    tl::slab_row<S>(row) (async.h), element by element."""
    import types
    from tilelang.backend.cuda.layout.shared import placed_layout
    buf = Buffer("a", [rows, cols], as_dtype("float16"), scope="shared")
    p = types.SimpleNamespace(swizzle=swizzle_bytes, row_slabs=slabs, layout=None, strides=None)
    off = np.asarray(placed_layout(buf, p).offsets())
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    if slabs > 1:
        t = r >> 4
        w, s = t // slabs, t % slabs
        r = ((w >> 2) * slabs + s) * 64 + (w & 3) * 16 + (r & 15)
    width = swizzle_bytes // 2
    chunks = width // 8
    want = (c // width) * (rows * width) + r * width + ((((c >> 3) ^ (r >> {8: 0, 4: 1, 2: 2}[chunks])) & (chunks - 1)) << 3) + (c & 7)
    assert (off == want).all() and len(set(off.flat)) == rows * cols
