"""Register tiles of a warp-aligned thread range (layout/fragment.py `_range_tiles`): a
fragment that only the statements under `if tx < 32: ... else: ...` touch is laid out over
that branch's threads (thread lo + t plays t, as the branch's code does), and a 1-D
T.Parallel loop reading `xl[k, j]` at rows k of its own choosing runs on xl's column owners
(layout/tile.py `FREE` in a 1-D loop). Before, both went to shared memory (DeepSeek mHC's
fused pre kernel: xl and ol, every access a shared round trip)."""
import importlib.util
import os

import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops


def mix_in_range(n=4, hc=4, h=1024, blk=512, threads=96, lo=32):
    """The shape of the published example_mhc_pre fused kernel's `else` branch: rows of a
    residual mixed by weights, on threads lo..threads-1; the first warp does other work."""
    @T.prim_func
    def k(res: T.Tensor((n, hc, h), T.bfloat16), w: T.Tensor((hc,), T.float32),
          out: T.Tensor((n, h), T.bfloat16), side: T.Tensor((n, 32), T.float32)):
        with T.Kernel(n, threads=threads) as i:
            if T.get_thread_binding() < lo:
                s = T.alloc_fragment((32,), T.float32)
                for j in T.Parallel(32):
                    s[j] = w[j % hc] * 2.0
                T.copy(s, side[i, 0])
            else:
                w_s = T.alloc_shared((hc,), T.float32)
                for j in T.Parallel(hc):
                    w_s[j] = w[j]
                for i0 in T.Pipelined(h // blk, num_stages=2):
                    xs = T.alloc_shared((hc, blk), T.float32)
                    xl = T.alloc_fragment((hc, blk), T.float32)
                    T.copy(res[i, 0, i0 * blk], xs)
                    T.copy(xs, xl)
                    ol = T.alloc_fragment(blk, T.float32)
                    T.clear(ol)
                    for r in T.serial(hc):
                        wr = w_s[r]
                        for j in T.Parallel(blk):
                            ol[j] += wr * xl[r, j]
                    T.copy(ol, out[i, i0 * blk])
    return k


def _report(func, capsys, monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_DUMP_FRAGMENTS", "1")
    art = build(func)
    return art, {ln.split()[0]: ln for ln in capsys.readouterr().err.splitlines()[1:]}


@needs_nvrtc
def test_branch_fragments_are_tiles_of_the_branch_threads(capsys, monkeypatch):
    art, rep = _report(mix_in_range(), capsys, monkeypatch)
    # 64 threads of the else branch: whole columns of xl (V = 512 / 64), ol alike
    assert "ThreadTile<4, 512, T=64, V=8>" in rep["xl"] and "registers" in rep["xl"], rep
    assert "ThreadTile<1, 512, T=64, V=8>" in rep["ol"], rep
    assert "ThreadTile<1, 32, T=32," in rep["s"], rep      # the first warp's own tile
    assert "float xl[32];" in art.source and "float ol[8];" in art.source
    assert "const int tl_tid = (int)threadIdx.x - 32;" in art.source   # thread 32 + t plays t
    # xl[r, j] on the owner of column j: register r * V + the column's lane
    assert "(wr * xl[(r) * 8 + tl_e" in art.source, art.source


@needs_nvrtc
def test_a_fragment_of_two_ranges_stays_shared(capsys, monkeypatch):
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64):
            f = T.alloc_fragment((64,), T.float32)
            if T.get_thread_binding() < 32:
                for j in T.Parallel(64):
                    f[j] = A[j]
            else:
                for j in T.Parallel(64):
                    B[j] = f[j]
    _, rep = _report(k, capsys, monkeypatch)
    assert "shared" in rep["f"] and "more than one thread range" in rep["f"], rep


@needs_nvrtc
def test_columns_the_branch_cannot_own_fall_back_to_shared(capsys, monkeypatch):
    # 200 columns over 64 threads: no whole-column split; xl stays in shared memory
    _, rep = _report(mix_in_range(h=400, blk=200), capsys, monkeypatch)
    assert "shared" in rep["xl"], rep


def rows_out(n=2, hc=4, blk=512, threads=128):
    """A 1-D loop whose only register fragment is the 2-D tile it reads at rows of its own
    choosing: it runs over its own columns (one chunk per thread), not over the tile's rows."""
    @T.prim_func
    def k(res: T.Tensor((n, hc, blk), T.float32), out: T.Tensor((n, hc * blk), T.float32)):
        with T.Kernel(n, threads=threads) as i:
            xl = T.alloc_fragment((hc, blk), T.float32)
            T.copy(res[i, 0, 0], xl)
            for r in T.serial(hc):
                for j in T.Parallel(blk):
                    out[i, r * blk + j] = xl[r, j] * 2.0
    return k


@needs_nvrtc
def test_a_loop_over_free_rows_only_runs_its_own_columns(capsys, monkeypatch):
    art, rep = _report(rows_out(), capsys, monkeypatch)
    assert "ThreadTile<4, 512, T=128, V=4>" in rep["xl"], rep
    loop = art.source[art.source.index("for (int r = 0"):]
    assert "tl_c_1 < 1;" in loop and "xl[(r) * 4 + tl_e" in loop, loop


@needs_sass
def test_no_spills():
    ops = sass_ops(build(mix_in_range()))
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


@pytest.mark.gpu
def test_rows_out_on_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from tilelang.backend.registry import get_backend, parse_target
    res = torch.randn(2, 4, 512, device="cuda")
    out = torch.full((2, 4 * 512), float("nan"), device="cuda")
    be = get_backend("cuda")
    be.load(be.build(rows_out(), parse_target("cuda")))([res, out], (), ())
    torch.cuda.synchronize()
    torch.testing.assert_close(out, res.reshape(2, -1) * 2.0)


@pytest.mark.gpu
@pytest.mark.parametrize("h,blk", [(1024, 512), (400, 200)])
def test_mix_in_range_on_gpu(h, blk):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from tilelang.backend.registry import get_backend, parse_target
    torch.manual_seed(0)
    n, hc = 4, 4
    res = torch.randn(n, hc, h, device="cuda").bfloat16()
    w = torch.randn(hc, device="cuda")
    out = torch.full((n, h), float("nan"), device="cuda").bfloat16()
    side = torch.zeros(n, 32, device="cuda")
    be = get_backend("cuda")
    be.load(be.build(mix_in_range(n=n, hc=hc, h=h, blk=blk), parse_target("cuda")))([res, w, out, side], (), ())
    torch.cuda.synchronize()
    ref = (res.float() * w.view(1, hc, 1)).sum(1)
    torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(side, (w.repeat(8) * 2.0).expand(n, 32))


_EXAMPLES = os.environ.get("TL_PUB_EXAMPLES", os.path.join(os.path.dirname(__file__), *[".."] * 4, ".pub", "examples"))
_MHC_PRE = os.path.join(_EXAMPLES, "deepseek_mhc", "example_mhc_pre.py")


@pytest.mark.gpu
@pytest.mark.skipif(not os.path.exists(_MHC_PRE), reason="the published examples are not here (TL_PUB_EXAMPLES)")
@pytest.mark.parametrize("n,hidden", [(512, 1280), (2048, 4096)])
def test_published_mhc_pre_against_its_reference(monkeypatch, n, hidden):
    """The fused kernel's branch tiles, lane-group Sinkhorn reductions and the pipelined
    converting copy (5 and 8 iterations), by the example's own check against torch."""
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cuda")   # (the test session's default is the CPU)
    spec = importlib.util.spec_from_file_location("example_mhc_pre", _MHC_PRE)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    m.test(n=n, hidden_size=hidden, hc_mult=4)
