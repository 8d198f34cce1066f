"""What every vectorized access needs: the vector C types, whether consecutive lanes of an
index are consecutive and aligned, and the alignment the launcher checks. Shared by the
vector copies (vector_copy.py), element-wise compute (vector_compute.py), vector atomics
(vector_atomic.py) and the register-tile loops (emit/tile_loops.py)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir.visitor import _children, collect_vars
from tilelang.arith.simplify import linear_form, simplify
from tilelang.arith.divisibility import assumed_divisors, multiple_of

VEC_TYPES = {16: ("uint4", "make_uint4(0u, 0u, 0u, 0u)"), 8: ("uint2", "make_uint2(0u, 0u)"),
             4: ("unsigned", "0u"), 2: ("unsigned short", "(unsigned short)0")}
# float32 data moves as CUDA's float vectors (the same LDG/STG/LDS.128 and .64 as the
# words above; the published TileLang's spelling)
FLOAT_VEC_TYPES = {16: ("float4", "make_float4(0.f, 0.f, 0.f, 0.f)"), 8: ("float2", "make_float2(0.f, 0.f)")}


def vec_type(dtype, nbytes):
    """(C type, zero value) of a vector of `nbytes` bytes of `dtype` elements."""
    if dtype.name == "float32" and nbytes in FLOAT_VEC_TYPES:
        return FLOAT_VEC_TYPES[nbytes]
    return VEC_TYPES[nbytes]


def global_root(buf):
    """The tensor parameter a global buffer views (`T.Tensor(shape, dtype, A.data)`,
    T.view/T.reshape of a global tensor start at its first element), or None."""
    while getattr(buf, "alias_of", None) is not None:
        buf = buf.alias_of
    return buf if buf.scope == "global" and getattr(buf, "data_ptr", None) is None else None


def _require_aligned(cg, buf, nbytes):
    """The runtime checks that the parameter behind `buf` is aligned to `nbytes`."""
    root = global_root(buf)
    if root is not None:
        cg.aligned[root.name] = max(cg.aligned.get(root.name, 1), nbytes)


def _has(e, v):
    return any(x is v for x in collect_vars(e))


def _mult_except(e, v, V, divisors=None):
    """e = v + (terms that are multiples of V); with v absent, e is a multiple of V.
    `divisors` ({id(var): d}, arith/divisibility.py): runtime values the kernel
    promises (T.assume) to be multiples of d. The step may also come through
    `(v + multiples of V) % m` with m a multiple of V (the channel of an im2col index),
    and other terms may read v through `(v + multiples of V) // m` (constant over a
    vector: `_uniform`)."""
    lin = linear_form(simplify(e)) if e.dtype.is_int else None
    if lin is None:
        return False
    terms, const = lin
    if const % V:
        return False
    steps = 0
    for atom, c in terms.values():
        if v is not None and (atom is v or _steps_with(atom, v, V)):
            if c != 1:
                return False
            steps += 1
        elif multiple_of(atom, c, divisors or {}) % V or (v is not None and not _uniform(atom, v, V)):
            return False
    return steps == 1 or v is None or not _has(e, v)



def _divisor_of_vectors(e, V):
    m = E.const_int_value(e)
    return m is not None and m > 0 and m % V == 0


def _steps_with(e, v, V):
    """`e = (v + multiples of V) % m` with m a multiple of V: within a vector (v = V*q + t,
    t < V) it is `(V*q + ...) % m + t`, consecutive and starting on a multiple of V."""
    return isinstance(e, E.BinOp) and e.op == "%" and _divisor_of_vectors(e.b, V) and \
        _has(e.a, v) and _mult_except(e.a, v, V)


def _uniform(e, v, V):
    """`e` takes one value over each vector of V consecutive `v` starting on a multiple of
    V: it does not read v, or reads it only through `(v + multiples of V) // m` with m a
    multiple of V (the row/column of an im2col index, its padding checks)."""
    if v is None or not _has(e, v):
        return True
    if e is v:
        return False
    if isinstance(e, E.BinOp) and e.op == "//" and _divisor_of_vectors(e.b, V) and _mult_except(e.a, v, V):
        return True
    if isinstance(e, (E.BinOp, E.Not, E.Cast, E.Select, E.Call, E.BufferLoad)):
        return all(_uniform(c, v, V) for c in _children(e))
    return False

def kernel_divisors(cg):
    """The divisibility the kernel of codegen `cg` assumes of its parameters (cached)."""
    d = getattr(cg, "_assumed_divisors", None)
    if d is None:
        launch, params = getattr(cg, "launch", None), getattr(cg, "params", ())
        ids = {id(obj) for _, obj, _ in params}
        d = {} if launch is None else assumed_divisors(launch.body, lambda var: id(var) in ids)
        cg._assumed_divisors = d
    return d



def consecutive(e, v, V):
    """Whether index `e` steps by one element with `v` and starts each vector of V on a
    multiple of V: `e = v + (multiples of V)`. An index without `v` (a broadcast) is not."""
    return _has(e, v) and _mult_except(e, v, V)


# the elements a tl::sw128 / sw64 / sw32 tile keeps together: the XOR moves whole chunks of
# 8 (16 bytes of 16-bit data), so an aligned run inside one chunk stays contiguous
SWIZZLE_RUN = 8


def swizzled_vector_ok(idx, v, V):
    """Whether `tile[idx]` of a tile in a tl::sw* layout (emit/kernel.py `flat`; 2-D, or
    [stages, R, C]) moves as one vector of V elements as `v` runs over it: the row (and
    slot) is the same over the vector, the column steps by one from a multiple of V, and
    V divides the swizzle's run."""
    return len(idx) >= 2 and SWIZZLE_RUN % V == 0 and all(_uniform(i, v, V) for i in idx[:-1]) and \
        consecutive(idx[-1], v, V)


def _cond_ok(c, v, V):
    for atom in E.conjuncts(c):
        if _uniform(atom, v, V):
            continue
        # x < n and x >= n (a lower bound such as `x >= 0` where x is not provably
        # non-negative) hold for all of [x - v, x - v + V) or none when n % V == 0
        if not (isinstance(atom, E.BinOp) and atom.op in ("<", ">=") and not _has(atom.b, v)):
            return False
        if not _mult_except(atom.a, v, V) or not _mult_except(atom.b, None, V):
            return False
    return True


def _vector_access(strides, idx, v, V, divisors=None):
    """Whether `buf[idx]` touches V consecutive elements, starting at a multiple of V,
    as `v` runs over a vector: `v` steps one index whose stride is 1 (the last one for
    row-major buffers, any one for strided tensors), and every other stride is a
    multiple of V (a constant, or a linear form whose coefficients all are)."""
    dims = [d for d, i in enumerate(idx) if not _uniform(i, v, V)]
    if len(dims) != 1:
        return False
    d = dims[0]
    if E.const_int_value(strides[d]) != 1 or not _mult_except(idx[d], v, V, divisors):
        return False
    # a stride that is a symbolic multiple of V (`16 * k16` for a dynamic K specialized on
    # divisibility, or `N` after `T.assume(N % V == 0)`) keeps every vector aligned as
    # well as a constant one
    return all(_mult_except(E.convert(s), None, V, divisors) for k, s in enumerate(strides) if k != d)


def is_bound_atom(atom, idx, dim) -> bool:
    """Whether `atom` is `idx < dim` or `idx >= 0` (a bounds check of one dimension of a
    tensor whose extent is `dim`): what a bulk copy zero-fills outside of, and what a
    zero-filling cp.async may index its dimension by (ops/vector_copy.py in_bounds_source)."""
    if not isinstance(atom, E.BinOp) or E.const_int_value(simplify(E.binop("-", atom.a, idx))) != 0:
        return False
    if atom.op == "<":
        return E.const_int_value(simplify(E.binop("-", atom.b, dim))) == 0
    return atom.op == ">=" and E.const_int_value(atom.b) == 0


def offset_aligned16(offset, itemsize, align=16) -> bool:
    """Whether `offset` elements of `itemsize` bytes is provably a multiple of 16 bytes
    (`align`) in every block and iteration: every coefficient of its linear form and its
    constant are. A TMA box's innermost coordinate (and a bulk copy's address) must be: the
    hardware raises an illegal instruction otherwise (found by the fuzzer: a box at column 3
    of a float32 tensor); a tensor copy's shared address must be 128-byte aligned."""
    lin = linear_form(simplify(offset))
    if lin is None:
        return False
    terms, const = lin
    return (const * itemsize) % align == 0 and all((c * itemsize) % align == 0 for _, c in terms.values())
