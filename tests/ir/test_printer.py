import importlib.util
import sys

import tilelang.language as T
from tilelang.ir import structural_hash
from tests.kernels import gemm_func


def test_printer_reads_like_the_kernel():
    text = gemm_func().script()
    assert "with T.Kernel(2, 2, threads=128) as (bx, by):" in text
    assert 'A_shared = T.alloc_shared((64, 32), "float16")' in text
    assert "for k in T.Pipelined(2, num_stages=2):" in text
    assert "T.gemm(A_shared, B_shared, C_local)" in text
    assert "T.copy(A[by * 64:by * 64 + 64, k * 32:k * 32 + 32], A_shared)" in text


def test_printed_ir_reparses_to_the_same_structure(tmp_path):
    f = gemm_func(relu=True)
    path = tmp_path / "reparsed_kernel.py"
    path.write_text("import tilelang.language as T\n\n" + f.script())
    spec = importlib.util.spec_from_file_location("reparsed_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["reparsed_kernel"] = mod
    spec.loader.exec_module(mod)
    assert structural_hash(mod.gemm) == structural_hash(f)


def test_structural_hash_ignores_names_but_not_structure():
    assert structural_hash(gemm_func()) == structural_hash(gemm_func())
    assert structural_hash(gemm_func()) != structural_hash(gemm_func(bk=16))
    assert structural_hash(gemm_func()) != structural_hash(gemm_func(relu=True))


def test_strided_tensors_print_and_hash_their_strides():
    # before: a strided parameter printed like a contiguous one, so two kernels differing
    # only in strides shared one cache entry
    from tilelang.ir.structural_hash import structural_hash

    def make(strides):
        @T.prim_func
        def k(A: T.StridedTensor((4, 4), strides, "float32"), B: T.Tensor((4, 4), "float32")):
            with T.Kernel(1):
                T.copy(A, B)
        return k
    a, b = make((8, 2)), make((4, 1))
    assert 'A: T.StridedTensor((4, 4), (8, 2), "float32")' in a.script()
    assert structural_hash(a) != structural_hash(b)
