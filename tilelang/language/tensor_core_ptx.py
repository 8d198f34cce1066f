"""Single tensor-core instructions from the published API, for GEMMs written thread by
thread on registers (`T.alloc_local`) and shared memory:

- `T.ptx_ldmatrix(trans, num, src, dst)`: ldmatrix.m8n8.x{num}: each lane gives the
  shared address of one 16-byte row (lanes 8i..8i+7: matrix i) and receives `num`
  32-bit registers at `dst`;
- `T.ptx_mma(dtype, shape, "row", "col", a_type, b_type, c_type, A.data, a_off,
  B.data, b_off, C.data, c_off, saturate)`: one mma.sync on the warp's register
  fragments (offsets in elements);
- `T.ptx_wgmma_ss(dtype, "m64nNkK", a_k_major, b_k_major, a_type, b_type, c_type,
  desc_a.data, a_off, desc_b.data, b_off, C.data, c_off, scale_out, scale_a, scale_b)`
  and `T.ptx_wgmma_rs(...)` (A from registers): one wgmma.mma_async of the warpgroup,
  operands through descriptors (descriptor.py) whose start address advances by
  `a_off` / `b_off` units of 16 bytes; `scale_out` false overwrites C, `scale_a/b`
  false negate A/B.

Every thread runs them (ir/tensor_core_calls.py). The CUDA backend emits the PTX
(wgmma on sm_90a only); the CPU backend, which runs a block one thread after
another, rejects them."""
from __future__ import annotations

import re

from tilelang.ir import builder as B
from tilelang.language.descriptor import descriptor_element, shared_reads
from tilelang.language.register_operand import (PTX_BITS, check_room, const_bool, const_int, const_str,
                                                 element, ptx_type, registers)
from tilelang.ir import tensor_core_calls as TC
from tilelang.ir.buffer import Buffer
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import IntImm, StringImm, access_ptr, call, convert

_WGMMA_K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}
_WGMMA_ACC = {"f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",), "e4m3": ("f16", "f32"),
              "e5m2": ("f16", "f32"), "s8": ("s32",), "u8": ("s32",)}
_FAMILY = {"f16": "f16", "bf16": "bf16", "tf32": "tf32", "e4m3": "fp8", "e5m2": "fp8", "s8": "int", "u8": "int"}
# C element dtype of each accumulator type
_C_DTYPES = {"f16": "float16", "f32": "float32", "s32": "int32", "f64": "float64"}


def _shape(shape, what):
    s = const_str(shape, f"{what}: the shape")
    m = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", s)
    if m is None:
        raise TileLangError(f"{what}: the shape must look like 'm64n64k16', got {s!r}")
    return s, int(m.group(1)), int(m.group(2)), int(m.group(3))


def _scale_in(v, what):
    """The published scale_in_a/b: true (or 1) keeps the operand, false (or -1) negates it."""
    if isinstance(v, (int, bool)) and not isinstance(v, bool) and v == -1:
        return -1
    return 1 if const_bool(v, what) else -1


def _scale_out(v):
    if isinstance(v, Buffer) and v.is_var():
        v = v.load()
    return convert(int(v) if isinstance(v, bool) else v)


def _check_c(load, c_type, n_elems, what):
    want = _C_DTYPES[c_type]
    if load.buffer.dtype.name != want:
        raise TileLangError(f"{what}: the {c_type} accumulator `{load.buffer.name}` must hold {want}, "
                            f"got {load.buffer.dtype}")
    check_room(load, n_elems, f"{what}: the accumulator")


def _wgmma_types(shape, a_type, b_type, c_type, a_k_major, b_k_major, what):
    s, M, N, K = _shape(shape, what)
    a, b, c = (ptx_type(t, f"{what}: {n}") for t, n in ((a_type, "a_dtype"), (b_type, "b_dtype"),
                                                         (c_type, "accum_dtype")))
    if a not in _WGMMA_K:
        raise TileLangError(f"{what}: wgmma multiplies f16, bf16, tf32, e4m3/e5m2 or s8/u8, got {a}")
    if _FAMILY.get(b) != _FAMILY[a]:
        raise TileLangError(f"{what}: A is {a} but B is {b}")
    if c not in _WGMMA_ACC[a]:
        raise TileLangError(f"{what}: {a} inputs accumulate in {' or '.join(_WGMMA_ACC[a])}, got {c}")
    if M != 64 or K != _WGMMA_K[a]:
        raise TileLangError(f"{what}: {a} wgmma shapes are m64nNk{_WGMMA_K[a]}, got {s}")
    if N % 8 or not 8 <= N <= 256 or (_FAMILY[a] == "int" and N > 24 and N % 16):
        raise TileLangError(f"{what}: N must be a multiple of 8 from 8 to 256"
                            f"{' (multiples of 16 above 24 for integers)' if _FAMILY[a] == 'int' else ''}, "
                            f"got {s}")
    if _FAMILY[a] not in ("f16", "bf16") and not (a_k_major and b_k_major):
        raise TileLangError(f"{what}: {a} operands must be K-major in shared memory (only 16-bit types "
                            f"can be transposed)")
    return s, N, a, b, c


def ptx_wgmma_ss(dtype, wgmma_prefix, a_is_k_major, b_is_k_major, a_dtype_abbrv, b_dtype_abbrv,
                 accum_dtype_abbrv, A_desc, A_offset, B_desc, B_offset, C_data, C_offset, scale_out,
                 scale_in_a, scale_in_b):
    what = "T.ptx_wgmma_ss"
    B.require(what)
    ak, bk = const_bool(a_is_k_major, f"{what}: a_is_k_major"), const_bool(b_is_k_major, f"{what}: b_is_k_major")
    s, N, a, b, c = _wgmma_types(wgmma_prefix, a_dtype_abbrv, b_dtype_abbrv, accum_dtype_abbrv, ak, bk, what)
    da, db = descriptor_element(A_desc, f"{what} (A)"), descriptor_element(B_desc, f"{what} (B)")
    C = registers(C_data, C_offset, f"{what}: the accumulator")
    _check_c(C, c, N // 2, what)
    sa, sb = _scale_in(scale_in_a, f"{what}: scale_in_a"), _scale_in(scale_in_b, f"{what}: scale_in_b")
    if _FAMILY[a] == "int" and (sa, sb) != (1, 1):
        raise TileLangError(f"{what}: integer wgmma cannot negate its operands")
    reads = shared_reads(da, db)
    return call(TC.WGMMA_SS, [StringImm(s), IntImm(int(ak)), IntImm(int(bk)), StringImm(a), StringImm(b),
                              StringImm(c), da, convert(A_offset), db, convert(B_offset), access_ptr(C, 3),
                              _scale_out(scale_out), IntImm(sa), IntImm(sb), *reads], "handle")


def ptx_wgmma_rs(dtype, wgmma_prefix, b_is_k_major, a_dtype_abbrv, b_dtype_abbrv, accum_dtype_abbrv, A_buf,
                 A_offset, B_desc, B_offset, C_data, C_offset, scale_out, scale_in_a, scale_in_b):
    what = "T.ptx_wgmma_rs"
    B.require(what)
    bk = const_bool(b_is_k_major, f"{what}: b_is_k_major")
    s, N, a, b, c = _wgmma_types(wgmma_prefix, a_dtype_abbrv, b_dtype_abbrv, accum_dtype_abbrv, True, bk, what)
    A = registers(A_buf, A_offset, f"{what}: A")
    if A.buffer.dtype.bits != PTX_BITS[a]:
        raise TileLangError(f"{what}: A `{A.buffer.name}` holds {A.buffer.dtype}, the instruction reads {a}")
    check_room(A, 4 * 32 // PTX_BITS[a], f"{what}: A")
    db = descriptor_element(B_desc, f"{what} (B)")
    C = registers(C_data, C_offset, f"{what}: the accumulator")
    _check_c(C, c, N // 2, what)
    sa, sb = _scale_in(scale_in_a, f"{what}: scale_in_a"), _scale_in(scale_in_b, f"{what}: scale_in_b")
    if _FAMILY[a] == "int" and (sa, sb) != (1, 1):
        raise TileLangError(f"{what}: integer wgmma cannot negate its operands")
    return call(TC.WGMMA_RS, [StringImm(s), IntImm(int(bk)), StringImm(a), StringImm(b), StringImm(c),
                              access_ptr(A, 1), db, convert(B_offset), access_ptr(C, 3), _scale_out(scale_out),
                              IntImm(sa), IntImm(sb), *shared_reads(db)], "handle")


def ptx_ldmatrix(trans, num, src_access_ptr, dst_access_ptr, *rest):
    """ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16: `num` 8 x 8 matrices of
    16-bit elements from shared memory into `num` registers of this lane."""
    what = "T.ptx_ldmatrix"
    B.require(what)
    if rest:
        raise TileLangError(f"{what} takes (trans, num, src_access_ptr, dst_access_ptr)",
                            hint="src: T.access_ptr(A_shared[r, c], 'r'), dst: T.access_ptr(A_local[i], 'w')")
    t = const_bool(trans, f"{what}: trans")
    n = const_int(num, f"{what}: num")
    if n not in (1, 2, 4):
        raise TileLangError(f"{what} loads 1, 2 or 4 matrices, got {n}")
    src = element(src_access_ptr, 0, f"{what}: the source")
    if not src.buffer.scope.startswith("shared"):
        raise TileLangError(f"{what} reads shared memory; `{src.buffer.name}` is {src.buffer.scope}")
    dst = registers(dst_access_ptr, 0, f"{what}: the destination")
    size = dst.buffer.dtype.bits
    if size > 32 or 32 % size:
        raise TileLangError(f"{what}: the destination holds 32-bit registers; `{dst.buffer.name}` is "
                            f"{dst.buffer.dtype}")
    check_room(dst, n * 32 // size, f"{what}: the destination")
    return call(TC.LDMATRIX, [IntImm(int(t)), IntImm(n), access_ptr(src, 1), access_ptr(dst, 2)], "handle")


# (a type, M, N, K) -> accumulator types of mma.sync
_MMA_SHAPES = {
    ("f16", 16, 8, 16): ("f16", "f32"), ("f16", 16, 8, 8): ("f16", "f32"),
    ("bf16", 16, 8, 16): ("f32",), ("bf16", 16, 8, 8): ("f32",),
    ("tf32", 16, 8, 8): ("f32",), ("tf32", 16, 8, 4): ("f32",),
    ("s8", 16, 8, 32): ("s32",), ("s8", 16, 8, 16): ("s32",), ("s8", 8, 8, 16): ("s32",),
    ("u8", 16, 8, 32): ("s32",), ("u8", 16, 8, 16): ("s32",), ("u8", 8, 8, 16): ("s32",),
    ("e4m3", 16, 8, 32): ("f16", "f32"), ("e5m2", 16, 8, 32): ("f16", "f32"),
    ("f64", 8, 8, 4): ("f64",),
}


def ptx_mma(dtype, shape, A_layout, B_layout, A_dtype, B_dtype, C_dtype, multiplicand_a, a_index,
            multiplicand_b, b_index, accumulator, c_index, saturate=False, operator=None):
    """mma.sync.aligned.{shape}.row.col: C (registers) += A x B for the warp."""
    what = "T.ptx_mma"
    B.require(what)
    s, M, N, K = _shape(shape, what)
    a, b, c = (ptx_type(t, f"{what}: {n}") for t, n in ((A_dtype, "A_dtype"), (B_dtype, "B_dtype"),
                                                        (C_dtype, "C_dtype")))
    if operator is not None:
        raise TileLangError(f"{what}: 1-bit mma (operator={operator!r}) is not supported")
    lay = (const_str(A_layout, f"{what}: A_layout"), const_str(B_layout, f"{what}: B_layout"))
    if lay != ("row", "col"):
        raise TileLangError(f"{what}: these shapes take A row-major and B column-major (\"row\", \"col\"), "
                            f"got {lay}")
    accs = _MMA_SHAPES.get((a, M, N, K))
    if accs is None:
        shapes = sorted({f"m{m}n{n}k{k}" for (t, m, n, k) in _MMA_SHAPES if t == a})
        raise TileLangError(f"{what}: no {s} mma for {a} inputs" +
                            (f" (shapes: {', '.join(shapes)})" if shapes else ""))
    if _FAMILY.get(b, b) != _FAMILY.get(a, a):
        raise TileLangError(f"{what}: A is {a} but B is {b}")
    if c not in accs:
        raise TileLangError(f"{what}: {a} {s} accumulates in {' or '.join(accs)}, got {c}")
    sat = const_bool(saturate, f"{what}: saturate")
    if sat and c != "s32":
        raise TileLangError(f"{what}: saturate applies to integer mma only")
    A = registers(multiplicand_a, a_index, f"{what}: A")
    Bm = registers(multiplicand_b, b_index, f"{what}: B")
    C = registers(accumulator, c_index, f"{what}: the accumulator")
    for ld, t, n, name in ((A, a, M * K // 32, "A"), (Bm, b, K * N // 32, "B")):
        if ld.buffer.dtype.bits != PTX_BITS[t]:
            raise TileLangError(f"{what}: {name} `{ld.buffer.name}` holds {ld.buffer.dtype}, the instruction "
                                f"reads {t}")
        check_room(ld, n, f"{what}: {name}")
    _check_c(C, c, M * N // 32, what)
    return call(TC.MMA, [StringImm(s), StringImm(a), StringImm(b), StringImm(c), access_ptr(A, 1),
                         access_ptr(Bm, 1), access_ptr(C, 3), IntImm(int(sat))], "handle")
