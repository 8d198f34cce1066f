"""`T.gemm_sp` on the CPU reference: structured-sparse A given by its nonzeros and
metadata (format of tilelang.cuda.intrinsics.sparse_layout) times dense B, for each
sparse type, metadata width and storage order; shape and type mistakes are typed errors."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError, ShapeMismatchError, DTypeMismatchError
from tilelang.cuda.intrinsics.sparse_layout import GROUP_CONFIG, get_e_factor


def sparse_dense(M, K, dtype, rng):
    """A random M x K matrix with `elem` nonzeros in every group along K."""
    elem, group = GROUP_CONFIG[T.dtype(dtype)]
    a = rng.standard_normal((M, K)) if dtype != "int8" else rng.integers(1, 5, (M, K)).astype(np.float64)
    keep = np.argsort(rng.random((M, K // group, group)), axis=-1)[..., :elem]
    mask = np.zeros((M, K // group, group), bool)
    np.put_along_axis(mask, keep, True, axis=-1)
    return np.where(mask.reshape(M, K), a, 0)


def compress(a, dtype, meta_dtype):
    """(nonzeros, metadata) in the natural row-major format."""
    elem, group = GROUP_CONFIG[T.dtype(dtype)]
    M, K = a.shape
    nib_per_meta = T.dtype(meta_dtype).bits // 4
    vals = np.zeros((M, K // 2), a.dtype)
    meta = np.zeros((M, K // get_e_factor(dtype, meta_dtype)), np.int64)
    for m in range(M):
        for g in range(K // group):
            idx = [i for i in range(group) if a[m, g * group + i] != 0]
            idx = (idx + [i for i in range(group) if i not in idx])[:elem]
            idx.sort()
            vals[m, g * elem:(g + 1) * elem] = a[m, [g * group + i for i in idx]]
            units = [2 * idx[0], 2 * idx[0] + 1] if elem == 1 else idx   # positions in 16-bit units
            nib = units[0] | (units[1] << 2)
            meta[m, g // nib_per_meta] |= nib << (4 * (g % nib_per_meta))
    bits = T.dtype(meta_dtype).bits
    meta = np.where(meta >= 1 << (bits - 1), meta - (1 << bits), meta)   # to the signed type
    return vals, meta.astype(T.dtype(meta_dtype).as_numpy())


def sp_kernel(M, N, K, dtype, accum, meta, bm=32, bn=32, bk=64, trans_A=False, trans_E=False, trans_B=False):
    ef = get_e_factor(dtype, meta)
    a_shape, as_shape = ((K // 2, M), (bk // 2, bm)) if trans_A else ((M, K // 2), (bm, bk // 2))
    e_shape, es_shape = ((K // ef, M), (bk // ef, bm)) if trans_E else ((M, K // ef), (bm, bk // ef))
    b_shape, bs_shape = ((N, K), (bn, bk)) if trans_B else ((K, N), (bk, bn))

    @T.prim_func
    def f(A: T.Tensor(a_shape, dtype), E: T.Tensor(e_shape, meta), B: T.Tensor(b_shape, dtype),
          C: T.Tensor((M, N), accum)):
        with T.Kernel(N // bn, M // bm, threads=128) as (bx, by):
            As = T.alloc_shared(as_shape, dtype)
            Es = T.alloc_shared(es_shape, meta)
            Bs = T.alloc_shared(bs_shape, dtype)
            Cl = T.alloc_fragment((bm, bn), accum)
            T.clear(Cl)
            for k in T.Pipelined(K // bk, num_stages=2):
                if trans_A:
                    T.copy(A[k * bk // 2, by * bm], As)
                else:
                    T.copy(A[by * bm, k * bk // 2], As)
                if trans_E:
                    T.copy(E[k * bk // ef, by * bm], Es)
                else:
                    T.copy(E[by * bm, k * bk // ef], Es)
                if trans_B:
                    T.copy(B[bx * bn, k * bk], Bs)
                else:
                    T.copy(B[k * bk, bx * bn], Bs)
                T.gemm_sp(As, Es, Bs, Cl, transpose_A=trans_A, transpose_E=trans_E, transpose_B=trans_B)
            T.copy(Cl, C[by * bm, bx * bn])
    return f


CASES = [("float16", "float32", "int16", {}), ("float16", "float32", "int8", {}), ("float16", "float32", "int32", {}),
         ("bfloat16", "float32", "int16", {}), ("float32", "float32", "int16", {}), ("int8", "int32", "int32", {}),
         ("float16", "float32", "int16", {"trans_A": True, "trans_E": True, "trans_B": True})]


@pytest.mark.parametrize("dtype,accum,meta,kw", CASES)
def test_gemm_sp_matches_dense(dtype, accum, meta, kw):
    rng = np.random.default_rng(1)
    M, N, K = 64, 64, 128
    npdt = T.dtype(dtype).as_numpy()
    a = sparse_dense(M, K, dtype, rng).astype(npdt)
    b = (rng.standard_normal((K, N)) if dtype != "int8" else rng.integers(-3, 4, (K, N))).astype(npdt)
    vals, e = compress(a.astype(np.float64), dtype, meta)
    vals = vals.astype(npdt)
    A = np.ascontiguousarray(vals.T) if kw.get("trans_A") else vals
    E = np.ascontiguousarray(e.T) if kw.get("trans_E") else e
    B = np.ascontiguousarray(b.T) if kw.get("trans_B") else b
    c = np.zeros((M, N), T.dtype(accum).as_numpy())
    tilelang.compile(sp_kernel(M, N, K, dtype, accum, meta, **kw), target="cpu")(A, E, B, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=2e-2)


def _bad(shape_e=(32, 4), edt="int16", shape_b=(64, 32), dt_b="float16"):
    @T.prim_func
    def f(C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((32, 32), "float16")
            Es = T.alloc_shared(shape_e, edt)
            Bs = T.alloc_shared(shape_b, dt_b)
            Cl = T.alloc_fragment((32, 32), "float32")
            T.gemm_sp(As, Es, Bs, Cl)
    return f


def test_errors():
    _bad()  # the well-formed version builds
    with pytest.raises(ShapeMismatchError, match="K/2 = 32 columns but B"):
        _bad(shape_b=(32, 32))
    with pytest.raises(ShapeMismatchError, match="metadata `Es` is 32x8"):
        _bad(shape_e=(32, 8))
    with pytest.raises(DTypeMismatchError, match="must be an integer tile"):
        _bad(edt="float16")
    with pytest.raises(DTypeMismatchError, match="different dtypes"):
        _bad(dt_b="bfloat16")
    with pytest.raises(TileLangError):
        T.gemm_sp(None, None, None, None)


def test_printed_ir_parses_again(tmp_path):
    text = _bad().script()
    assert "T.gemm_sp(As, Es, Bs, Cl, transpose_A=False" in text
    src = tmp_path / "printed_gemm_sp.py"
    src.write_text("import tilelang.language as T\n\n" + text)
    import importlib.util
    spec = importlib.util.spec_from_file_location("printed_gemm_sp", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.f.script() == text
