"""Column-owner register tiles (layout/tile.py `column_owner`, emit/tile_loops.py
`_owned_slot`): a T.Parallel(m, n) nest that reads `b[k, j]` at rows k of its own choosing
(DeepSeek mHC's post block: `x[o, j] += a[k, o] * b[k, j]` under `for k in T.serial`)
gives b a tile whose threads hold whole columns (V = n / threads), so every row of the
thread's columns is in its registers (before: b in shared memory)."""
import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tilelang.backend.cuda.layout.tile import ThreadTile, column_owner


def mix_rows(n=8, hc=4, h=1024, h_blk=512, threads=128):
    """The published mhc_post kernel at a small static size."""
    @T.prim_func
    def post(a: T.Tensor((n, hc, hc), T.float32), b: T.Tensor((n, hc, h), T.bfloat16),
             c: T.Tensor((n, hc), T.float32), d: T.Tensor((n, h), T.bfloat16),
             x: T.Tensor((n, hc, h), T.bfloat16)):
        with T.Kernel(n, threads=threads) as i_n:
            x_shared = T.alloc_shared((hc, h_blk), T.bfloat16)
            b_shared = T.alloc_shared((hc, h_blk), T.bfloat16)
            d_shared = T.alloc_shared(h_blk, T.bfloat16)
            x_local = T.alloc_fragment((hc, h_blk), T.float32)
            b_local = T.alloc_fragment((hc, h_blk), T.float32)
            d_local = T.alloc_fragment(h_blk, T.float32)
            a_local = T.alloc_fragment((hc, hc), T.float32)
            c_local = T.alloc_fragment(hc, T.float32)
            T.copy(a[i_n, 0, 0], a_local)
            T.copy(c[i_n, 0], c_local)
            for i0_h in T.Pipelined(T.ceildiv(h, h_blk), num_stages=2):
                T.copy(b[i_n, 0, i0_h * h_blk], b_shared)
                T.copy(d[i_n, i0_h * h_blk], d_shared)
                T.copy(b_shared, b_local)
                T.copy(d_shared, d_local)
                for i_hco, i1_h in T.Parallel(hc, h_blk):
                    x_local[i_hco, i1_h] = c_local[i_hco] * d_local[i1_h]
                    for i_hci in T.serial(hc):
                        x_local[i_hco, i1_h] += a_local[i_hci, i_hco] * b_local[i_hci, i1_h]
                T.copy(x_local, x_shared)
                T.copy(x_shared, x[i_n, 0, i0_h * h_blk])
    return post


def test_column_owner_tile_holds_every_row_of_its_columns():
    L = ThreadTile(4, 512, 128, 4)
    assert column_owner(L) and not column_owner(ThreadTile(4, 512, 128, 8))
    for t in (0, 5, 127):
        for r in range(L.regs):
            # register r = row * V + lane: chunk c is row c, the same V columns in each
            assert L.row(t, r) == r // L.V and L.col(t, r) == t * L.V + r % L.V


def _report(func, capsys, monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_DUMP_FRAGMENTS", "1")
    art = build(func)
    return art, {ln.split()[0]: ln for ln in capsys.readouterr().err.splitlines()[1:]}


@needs_nvrtc
def test_rows_of_its_own_choosing_make_a_column_owner_tile(capsys, monkeypatch):
    art, rep = _report(mix_rows(), capsys, monkeypatch)
    for name in ("x_local", "b_local"):
        assert "ThreadTile<4, 512, T=128, V=4>" in rep[name] and "registers" in rep[name], rep
    assert "TileCols" in rep["d_local"] and "TileRows" in rep["c_local"], rep
    # a[k, o]: a row of its own choosing and the loop's row as the column: shared memory
    assert "shared" in rep["a_local"], rep
    assert "(i_hci) * 4 + tl_e]" in art.source, art.source


@needs_nvrtc
@pytest.mark.parametrize("h,h_blk", [(400, 200),    # 200 columns over 128 threads: no whole-column split
                                     (256, 128)])   # one bf16 column per thread: 2-byte accesses
def test_columns_the_threads_cannot_own_fall_back_to_shared(capsys, monkeypatch, h, h_blk):
    _, rep = _report(mix_rows(h=h, h_blk=h_blk), capsys, monkeypatch)
    assert "shared" in rep["b_local"] and "whole columns" in rep["b_local"], rep


@needs_sass
def test_mix_rows_sass_has_no_spills():
    ops = sass_ops(build(mix_rows()))
    assert ops["LDL"] == 0 and ops["STL"] == 0 and ops["FFMA"] >= 64, ops


@pytest.mark.gpu
@pytest.mark.parametrize("h,h_blk", [(1024, 512), (2560, 512)])
def test_mix_rows_on_gpu(h, h_blk):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from tilelang.backend.registry import get_backend, parse_target
    torch.manual_seed(0)
    n, hc = 8, 4
    a = torch.randn(n, hc, hc, device="cuda")
    b = torch.randn(n, hc, h, device="cuda").bfloat16()
    c = torch.randn(n, hc, device="cuda")
    d = torch.randn(n, h, device="cuda").bfloat16()
    x = torch.full((n, hc, h), float("nan"), device="cuda").bfloat16()
    be = get_backend("cuda")
    be.load(be.build(mix_rows(n=n, hc=hc, h=h, h_blk=h_blk), parse_target("cuda")))([a, b, c, d, x], (), ())
    torch.cuda.synchronize()
    ref = torch.bmm(a.mT, b.float()) + c.unsqueeze(-1) * d.float().unsqueeze(-2)
    torch.testing.assert_close(x.float(), ref, rtol=1e-2, atol=1e-2)
