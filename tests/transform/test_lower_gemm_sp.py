"""before / expected: `T.gemm_sp` becomes a dense tile, the decompression loop and `T.gemm`."""
import tilelang.language as T
from tilelang.transform.lower_gemm_sp import lower_gemm_sp


def test_gemm_sp_becomes_decompress_and_gemm():
    @T.prim_func
    def before(C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((32, 32), "float16")
            Es = T.alloc_shared((32, 4), "int16")
            Bs = T.alloc_shared((64, 32), "float16")
            Cl = T.alloc_fragment((32, 32), "float32")
            T.gemm_sp(As, Es, Bs, Cl, clear_accum=True)
    text = lower_gemm_sp(before).script()
    assert "T.gemm_sp" not in text
    assert 'As_dense = T.alloc_shared((32, 64), "float16")' in text
    assert "for i, j in T.Parallel(32, 64):" in text
    # 4 nibbles per int16: the group's nibble, then the two kept positions
    assert "T.Cast(\"int32\", Es[i, j // 4 // 4]) >> 4 * (j // 4 % 4) & 15" in text.replace("'", '"')
    assert "T.gemm(As_dense, Bs, Cl, clear_accum=True)" in text


def test_fp32_uses_one_of_two():
    @T.prim_func
    def before(C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((16, 16), "float32")
            Es = T.alloc_shared((16, 4), "int16")
            Bs = T.alloc_shared((32, 16), "float32")
            Cl = T.alloc_fragment((16, 16), "float32")
            T.gemm_sp(As, Es, Bs, Cl)
    text = lower_gemm_sp(before).script()
    assert "As[i, j // 2]" in text and "j % 2 ==" in text
