"""Thread-tile register layouts for fragments that no gemm reaches (layout/tile.py,
emit/tile_loops.py): the layout arithmetic, the inference and its fallbacks, the SASS of
the row-wise examples (CPU, NVRTC), and on a GPU their results against torch."""
import importlib.util
import os

import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tilelang.backend.cuda.layout.tile import ThreadTile, TileRows, TileCols

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def _example(folder):
    path = os.path.join(ROOT, "examples", folder, f"example_{folder}.py")
    spec = importlib.util.spec_from_file_location(f"tile_layout_{folder}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("M,N,T,V", [(1, 4096, 256, 8), (4, 1024, 256, 8), (32, 64, 128, 4), (32, 64, 128, 8),
                                     (2, 4096, 128, 8), (8, 256, 256, 4), (16, 16, 64, 4)])
def test_thread_tile_covers_each_element_once_and_rows_cols_agree(M, N, T, V):
    assert ThreadTile.fits(M, N, T, V)
    L = ThreadTile(M, N, T, V)
    R, C = TileRows(L), TileCols(L)
    seen = {}
    for t in range(T):
        for r in range(L.regs):
            i, j = L.row(t, r), L.col(t, r)
            assert (i, j) not in seen
            seen[(i, j)] = t
            assert R.row(t, r // L.G) == i       # the row slot a tile slot reads
            assert C.col(t, r % L.G) == j        # the column slot
            if r % V == 0:   # a chunk: V contiguous elements of one row, starting at a multiple of V
                assert j % V == 0 and all(L.col(t, r + e) == j + e and L.row(t, r + e) == i for e in range(V))
    assert len(seen) == M * N
    # the threads that hold a row: aligned groups of `group` consecutive threads
    for i in range(M):
        owners = sorted({t for (a, _), t in seen.items() if a == i})
        assert len(owners) == L.group and owners[0] % L.group == 0 and owners == list(range(owners[0], owners[0] + L.group))


def test_fits_rejects_uneven_splits():
    assert not ThreadTile.fits(3, 100, 128, 4)     # 300 elements over 512 slots
    assert not ThreadTile.fits(1, 4096, 48, 8)     # not whole warps
    assert not ThreadTile.fits(2, 48 * 8, 96, 8)   # a row over 48 threads


def _report(func, capsys, monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_DUMP_FRAGMENTS", "1")
    build(func)
    return {ln.split()[0]: ln for ln in capsys.readouterr().err.splitlines()[1:]}


@needs_nvrtc
def test_rms_norm_fragments_all_in_registers(capsys, monkeypatch):
    f = _example("rms_norm").rms_norm.get_tir(16384, 4096, dtype=T.float16, block_M=4, block_N=1024, threads=256)
    rep = _report(f, capsys, monkeypatch)
    assert all(ln.rstrip().endswith("registers") for ln in rep.values()), rep
    assert "ThreadTile<4, 1024, T=256, V=8>" in rep["x"] and "TileRows" in rep["sum_sq"] and "TileCols" in rep["w"]


@needs_nvrtc
def test_non_canonical_index_falls_back_to_shared(capsys, monkeypatch):
    @T.prim_func
    def rev(A: T.Tensor((64, 256), "float32"), B: T.Tensor((64, 256), "float32")):
        with T.Kernel(16, threads=128) as bx:
            x = T.alloc_fragment((4, 256), "float32")
            y = T.alloc_fragment((4, 256), "float32")
            T.copy(A[bx * 4, 0], x)
            for i, j in T.Parallel(4, 256):
                y[i, j] = x[i, 255 - j]
            T.copy(y, B[bx * 4, 0])
    rep = _report(rev, capsys, monkeypatch)
    assert "shared" in rep["x"] and "registers" in rep["y"], rep


def _rowwise(name, M, N, cfg, dtype=T.float16):
    if name == "rms_norm":
        return _example("rms_norm").rms_norm.get_tir(M, N, dtype=dtype, **cfg)
    if name == "softmax":
        return _example("softmax").softmax.get_tir(M, N, dtype=dtype, **cfg)
    if name == "layer_norm":
        return _example("layer_norm").layer_norm.get_tir(M, N, dtype=dtype, **cfg)
    return getattr(_example("reduce"), name).get_tir(M, N, dtype=dtype, **cfg)


ROWWISE = ["rms_norm", "softmax", "layer_norm", "row_sum", "row_max"]
CONFIGS = [dict(block_M=1, block_N=4096, threads=256), dict(block_M=4, block_N=1024, threads=256),
           dict(block_M=32, block_N=64, threads=128)]


@needs_sass
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "x".join(map(str, c.values())))
@pytest.mark.parametrize("name", ROWWISE)
def test_rowwise_sm90a_registers_vectors_shuffles(name, cfg):
    art = build(_rowwise(name, 16384, 4096, cfg))
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(art.binary)
    ops = sass_ops(art)
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops
    assert "LDG.E.128" in text and "LDG.E.U16" not in text, ops     # 16-byte loads only
    if not name.startswith("row_"):
        assert "STG.E.128" in text and "STG.E.U16" not in text, ops
    assert ops["SHFL"] > 0, ops
    # no barriers between element-wise steps: one per cross-warp reduction and chunk, at most
    chunks = 4096 // cfg["block_N"]
    reduces = {"rms_norm": 1, "softmax": 2, "layer_norm": 2, "row_sum": 1, "row_max": 1}[name]
    assert ops["BAR"] <= reduces * chunks + chunks + 1, ops
    assert art.meta["kernels"][0]["smem"] <= 1024


# ---------------------------------------------------------------------------------- GPU
torch = None


def _torch():
    global torch
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no NVIDIA GPU found")
    return torch


def _refs(name, x, w, b):
    xf = x.double()
    if name == "rms_norm":
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double())
    if name == "softmax":
        return torch.softmax(xf, -1)
    if name == "layer_norm":
        return torch.nn.functional.layer_norm(xf, (x.shape[-1],), w.double(), b.double(), 1e-5)
    if name == "row_sum":
        return xf.sum(-1)
    return xf.max(-1).values


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(16384, 4096), (1000, 1000), (77, 1001)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "x".join(map(str, c.values())))
@pytest.mark.parametrize("name", ROWWISE)
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_rowwise_on_gpu(name, cfg, shape, dtype):
    _torch()
    from tilelang.backend.registry import get_backend, parse_target
    M, N = shape
    td = getattr(torch, dtype)
    x = torch.randn(M, N, device="cuda", dtype=td) * 2 - 0.5
    w = torch.randn(N, device="cuda", dtype=td)
    b = torch.randn(N, device="cuda", dtype=td)
    out_shape = (M,) if name.startswith("row_") else (M, N)
    y = torch.full(out_shape, float("nan"), device="cuda", dtype=td)
    args = {"rms_norm": [x, w, y], "layer_norm": [x, w, b, y]}.get(name, [x, y])
    be = get_backend("cuda")
    func = _rowwise(name, M, N, cfg, dtype=getattr(T, dtype))
    be.load(be.build(func, parse_target("cuda")))(args, (), ())
    torch.cuda.synchronize()
    ref = _refs(name, x, w, b)
    assert not torch.isnan(y).any()
    err = ((y.double() - ref).norm() / ref.norm()).item()
    assert err < (2e-3 if dtype == "float16" else 1e-5), err


@needs_sass
def test_elementwise_add_reads_shared_tiles_as_vectors():
    ew = _example("elementwise")
    art = build(ew.elementwise_add.get_tir(65536, 4096, in_dtype=T.float16, out_dtype=T.float16,
                                           block_M=32, block_N=256, threads=256))
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(art.binary)
    ops = sass_ops(art)
    assert ops["LDL"] == 0 and ops["STL"] == 0 and ops["BAR"] == 1, ops
    assert "LDS.128" in text and "LDS.U16" not in text and "STG.E.128" in text, ops
