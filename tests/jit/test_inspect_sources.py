"""`get_kernel_source(...)` on a `@tilelang.jit` object (eager body or factory)
compiles for those arguments and returns the generated source."""
import tilelang
import tilelang.language as T


@tilelang.jit(target="cpu")
def scaled_copy(A, scale=2.0, block=16):
    n = T.const("n")
    A: T.Tensor((n,), T.float32)
    B = T.empty((n,), T.float32)
    with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
        for i in T.Parallel(block):
            B[bx * block + i] = A[bx * block + i] * scale
    return B


@tilelang.jit(target="cpu", out_idx=[-1])
def factory(n, block=16):
    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] + 1.0
    return k


def test_eager_source_by_const_names():
    src = scaled_copy.get_kernel_source(n=64, scale=3.0)
    assert "3.0f" in src and "tl_entry" in src
    assert scaled_copy.get_kernel_source(n=64, scale=5.0) != src


def test_factory_source():
    src = factory.get_kernel_source(128, block=32)
    assert "1.0f" in src
    assert src == factory(128, block=32).get_kernel_source()


def test_show_source_which_and_print_source_code(capsys, tmp_path):
    kernel = factory(64, block=32)
    kernel.show_source("both")
    both = capsys.readouterr().out
    assert "===== Kernel Source =====" in both and "===== Host Source =====" in both
    kernel.print_source_code()   # the published package's older name
    assert capsys.readouterr().out.strip() == kernel.get_kernel_source().strip()
    path = tmp_path / "sub" / "kernel.cc"
    kernel.print_source_code(file=str(path))
    assert path.read_text() == kernel.get_kernel_source()
    import pytest
    with pytest.raises(ValueError, match="which"):
        kernel.show_source("device")
    with pytest.raises(ValueError, match="kernel_path or host_path"):
        kernel.export_sources()
