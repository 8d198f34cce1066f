"""plan/kernel.py _atomic_staging_tiles: a 32-bit shared tile that stages an mma accumulator
for global atomics (the published sparse MLA backward's dKV update) gets 16-byte row padding,
so that the accumulator's stores stop hitting 8 rows of the same banks; a tile that anything
else reads keeps dense rows. CPU only: the plan, no compile."""
import pytest

import tilelang.language as T
from tilelang.backend.cuda.plan.plan_kernels import plan_kernels, kernel_plan
from tests.backend.cuda.plan.test_plan_kernels import _lower_to, _launch


def staging(read_plainly=False):
    """c = A B (wgmma), staged through Ss ([32, 64] float: 256-byte rows) into D with atomics;
    `read_plainly`: a nest copies Ss to E as well."""
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"),
             D: T.Tensor((64, 64), "float32"), E: T.Tensor((32, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            Ss = T.alloc_shared((32, 64), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, c, clear_accum=True)
            for s in T.serial(2):
                for i, j in T.Parallel(64, 64):
                    if i < 32:
                        Ss[i, j] = c[i + s * 32, j]
                for i, j in T.Parallel(32, 16):
                    T.atomic_addx4(D[i + s * 32, j * 4], Ss[i, j * 4])
                if read_plainly:
                    for i, j in T.Parallel(32, 64):
                        E[i, j] = Ss[i, j]
    return main


def _strides(func, name):
    _, after, _ = _lower_to(func, plan_kernels)
    plan = kernel_plan(_launch(after))
    from tilelang.ir.visitor import walk
    from tilelang.ir import stmt as S
    bufs = []
    walk(_launch(after).body, lambda n: bufs.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    buf = next(b for b in bufs if b.name == name)
    return plan.placements[id(buf)].strides


def test_a_tile_staging_an_accumulator_for_atomics_is_padded(monkeypatch):
    assert _strides(staging(), "Ss") == [68, 1]
    monkeypatch.setenv("TILELANG_CUDA_PAD_ATOMIC_STAGING", "0")
    assert _strides(staging(), "Ss") == [64, 1]


def test_a_staging_tile_read_by_other_code_keeps_dense_rows():
    assert _strides(staging(read_plainly=True), "Ss") == [64, 1]


@pytest.mark.gpu
@pytest.mark.parametrize("pad", ["1", "0"])
def test_padded_staging_adds_the_product_on_gpu(monkeypatch, pad):
    import tilelang
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILELANG_CUDA_PAD_ATOMIC_STAGING", pad)
    monkeypatch.setenv("TILELANG_CUDA_GEMM_SELECTIVE_FENCES", pad)
    k = tilelang.compile(staging(), target="cuda")
    assert ("* 68)" in k.get_kernel_source()) == (pad == "1")
    a = torch.randn(64, 64, device="cuda").half()
    b = torch.randn(64, 64, device="cuda").half()
    d = torch.zeros(64, 64, device="cuda")
    e = torch.zeros(32, 64, device="cuda")
    k(a, b, d, e)
    torch.testing.assert_close(d, a.float() @ b.float(), rtol=1e-2, atol=1e-2)
