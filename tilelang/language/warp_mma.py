"""A GEMM written warp by warp: `TensorCoreIntrinEmitter` (published under
`tilelang.cuda.intrinsics.macro.mma_macro_generator`). The kernel allocates
per-thread register arrays (`T.alloc_local`) and calls

    emitter.ldmatrix_a(A_local, A_shared, ki)   # A registers for K step ki
    emitter.ldmatrix_b(B_local, B_shared, ki)
    emitter.mma(A_local, B_local, C_local)      # C registers += A x B
    emitter.stmatrix(C_local, C_shared)         # registers -> tile

Each call records one warp-level op (`ir/warp_ops.py`) acting on all warps of the
block; the register layout is `layout/mma_tiling.py`."""
from __future__ import annotations

from tilelang.ir import builder as _builder
from tilelang.ir import warp_ops as W
from tilelang.ir.buffer import Buffer, BufferRegion, to_region
from tilelang.ir.dtypes import as_dtype
from tilelang.ir.expr import BufferLoad, convert, const_int_value
from tilelang.ir.errors import TileLangError, ShapeMismatchError
from tilelang.layout.mma_tiling import WarpMmaTiling, WARP_SIZE

_ABBREV = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int8": "int8",
           "uint8": "uint8", "int32": "int32", "int4": "int4", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2",
           "float8_e4m3fnuz": "e4m3", "float8_e5m2fnuz": "e5m2"}


def _local(buf, what, need):
    if not isinstance(buf, Buffer) or buf.scope != "local":
        got = f"a {buf.scope} buffer" if isinstance(buf, Buffer) else type(buf).__name__
        raise TileLangError(f"{what} must be a per-thread register array (T.alloc_local), got {got}")
    n = const_int_value(buf.numel())
    if n is None or n < need:
        raise ShapeMismatchError(f"{what} `{buf.name}` holds {n} elements per thread; this emitter needs {need}",
                                 hint="allocate it with T.alloc_local((warp_rows * local_size, ), dtype)")
    return buf


def _tile(x, what, scopes):
    if isinstance(x, BufferLoad):
        x = BufferRegion(x.buffer, [(i, convert(1)) for i in x.indices])
    if not isinstance(x, (Buffer, BufferRegion)):
        raise TileLangError(f"{what} must be a buffer or a slice of one, got {type(x).__name__}")
    r = to_region(x)
    if r.buffer.scope not in scopes:
        raise TileLangError(f"{what} `{r.buffer.name}` is {r.buffer.scope}; it must be "
                            f"{' or '.join(scopes)}")
    if r.buffer.ndim < 2:
        raise ShapeMismatchError(f"{what} `{r.buffer.name}` must have at least 2 dimensions")
    return r


class TensorCoreIntrinEmitter:
    """Emits warp-level tensor-core ops for a block of `block_row_warps x
    block_col_warps` warps, each computing `warp_row_tiles x warp_col_tiles` of C,
    K in steps of `micro_size_k` (sm_80+ `mma.sync`; CPU: the reference semantics)."""

    M_DIM = 16
    WARP_SIZE = WARP_SIZE
    dtype_abbrv = dict(_ABBREV)

    def __init__(self, a_dtype="float16", b_dtype="float16", accum_dtype="float16", a_transposed=False,
                 b_transposed=False, block_row_warps=2, block_col_warps=2, warp_row_tiles=8, warp_col_tiles=8,
                 chunk=16, reduce_k=1, num_elems_per_byte=1, is_m_first=False, thread_var=None):
        if reduce_k != 1:
            raise TileLangError("TensorCoreIntrinEmitter: reduce_k > 1 (split-K across warps) is not supported")
        if num_elems_per_byte != 1:
            raise TileLangError("TensorCoreIntrinEmitter: packed sub-byte operands are not supported")
        try:
            self.tiling = WarpMmaTiling.make(a_dtype, b_dtype, accum_dtype, a_transposed, b_transposed,
                                             block_row_warps, block_col_warps, warp_row_tiles, warp_col_tiles,
                                             chunk, bool(is_m_first))
        except ValueError as e:
            raise TileLangError(f"TensorCoreIntrinEmitter: {e}") from None
        t = self.tiling
        self.a_dtype, self.b_dtype, self.accum_dtype = t.a_dtype, t.b_dtype, t.accum_dtype
        self.a_transposed, self.b_transposed = t.a_transposed, t.b_transposed
        self.block_row_warps, self.block_col_warps = t.block_row_warps, t.block_col_warps
        self.warp_row_tiles, self.warp_col_tiles, self.chunk = t.warp_row_tiles, t.warp_col_tiles, t.chunk
        self.is_m_first = t.is_m_first
        self.reduce_k, self.num_elems_per_byte, self.thread_var = reduce_k, num_elems_per_byte, thread_var
        self.k_dim, self.n_dim = t.micro_k, t.micro_n
        self.micro_size_x, self.micro_size_y, self.micro_size_k = t.micro_m, t.micro_n, t.micro_k
        self.warp_rows, self.warp_cols = t.warp_rows, t.warp_cols
        self.local_size_a, self.local_size_b, self.local_size_out = t.local_size_a, t.local_size_b, t.local_size_c
        self.threads = t.threads
        self.mma_prefix = f"m16n8k{t.micro_k}"
        self.a_dtype_abbrv = _ABBREV.get(t.a_dtype.name, t.a_dtype.name)
        self.b_dtype_abbrv = _ABBREV.get(t.b_dtype.name, t.b_dtype.name)
        self.accum_dtype_abbrv = _ABBREV.get(t.accum_dtype.name, t.accum_dtype.name)

    # threads ------------------------------------------------------------------
    def get_thread_binding(self):
        if self.thread_var is not None:
            return self.thread_var
        from tilelang.language.kernel import get_thread_binding
        return get_thread_binding(0)

    def extract_thread_binding(self, thread_id, is_m_first=None):
        """(lane, warp_n, warp_m) of a thread index (published order of the tuple)."""
        t = self.tiling
        if is_m_first is not None and bool(is_m_first) != t.is_m_first:
            t = WarpMmaTiling.make(t.a_dtype, t.b_dtype, t.accum_dtype, t.a_transposed, t.b_transposed,
                                   t.block_row_warps, t.block_col_warps, t.warp_row_tiles, t.warp_col_tiles,
                                   t.chunk, bool(is_m_first))
        lane, warp_m, warp_n = t.split_thread(thread_id)
        return lane, warp_n, warp_m

    # ops ----------------------------------------------------------------------
    def _k_offset(self, ki, rk):
        return convert(rk) * self.chunk + convert(ki) * self.micro_size_k

    def ldmatrix_a(self, A_local_buf, A_shared_buf, ki, rk=0):
        b = _builder.require("ldmatrix_a")
        dst = _local(A_local_buf, "ldmatrix_a destination", self.warp_rows * self.local_size_a)
        src = _tile(A_shared_buf, "ldmatrix_a source", ("shared",))
        self._check_dtype(src.buffer, self.a_dtype, "A")
        b.emit(W.WarpMmaLoad("A", dst, src, self._k_offset(ki, rk), self.tiling))

    def ldmatrix_b(self, B_local_buf, B_shared_buf, ki, rk=0):
        b = _builder.require("ldmatrix_b")
        dst = _local(B_local_buf, "ldmatrix_b destination", self.warp_cols * self.local_size_b)
        src = _tile(B_shared_buf, "ldmatrix_b source", ("shared",))
        self._check_dtype(src.buffer, self.b_dtype, "B")
        b.emit(W.WarpMmaLoad("B", dst, src, self._k_offset(ki, rk), self.tiling))

    def mma(self, A_local_buf, B_local_buf, C_local_buf, k_inner=0):
        b = _builder.require("mma")
        A = _local(A_local_buf, "mma operand A", self.warp_rows * self.local_size_a)
        B = _local(B_local_buf, "mma operand B", self.warp_cols * self.local_size_b)
        C = _local(C_local_buf, "mma accumulator", self.warp_rows * self.warp_cols * self.local_size_out)
        if C.dtype != self.accum_dtype:
            raise TileLangError(f"mma accumulator `{C.name}` is {C.dtype}, the emitter accumulates in "
                                f"{self.accum_dtype}")
        b.emit(W.WarpMma(A, B, C, self.tiling))

    # atom level: mma() is mma_atom(i, j) for every (i, j) of T.grid(mma_num_inst_m, mma_num_inst_n)
    @property
    def mma_num_inst_m(self):
        return self.warp_rows

    @property
    def mma_num_inst_n(self):
        return self.warp_cols

    def mma_atom(self, A_local_buf, B_local_buf, C_local_buf, inst_m_idx, inst_n_idx, k_inner=0):
        """One atom: A's atom row `inst_m_idx` x B's atom column `inst_n_idx` into C's
        (inst_m_idx, inst_n_idx) accumulators. The registers hold one K step (`ldmatrix_a/b`
        chose it), so `k_inner` only names it, as in `mma`."""
        b = _builder.require("mma_atom")
        A = _local(A_local_buf, "mma_atom operand A", self.warp_rows * self.local_size_a)
        B = _local(B_local_buf, "mma_atom operand B", self.warp_cols * self.local_size_b)
        C = _local(C_local_buf, "mma_atom accumulator", self.warp_rows * self.warp_cols * self.local_size_out)
        if C.dtype != self.accum_dtype:
            raise TileLangError(f"mma_atom accumulator `{C.name}` is {C.dtype}, the emitter accumulates in "
                                f"{self.accum_dtype}")
        atom = []
        for v, n, what in ((inst_m_idx, self.warp_rows, "inst_m_idx"), (inst_n_idx, self.warp_cols, "inst_n_idx")):
            e = convert(v)
            c = const_int_value(e)
            if c is not None and not 0 <= c < n:
                raise TileLangError(f"mma_atom: {what} = {c} is outside 0..{n - 1}")
            atom.append(e)
        b.emit(W.WarpMma(A, B, C, self.tiling, atom=tuple(atom)))

    def stmatrix(self, C_local_buf, C_buf, pid_m=None, pid_n=None):
        b = _builder.require("stmatrix")
        src = _local(C_local_buf, "stmatrix source", self.warp_rows * self.warp_cols * self.local_size_out)
        if not isinstance(C_buf, Buffer) or C_buf.ndim not in (2, 4):
            raise ShapeMismatchError("stmatrix destination must be a 2-D or 4-D buffer")
        if (pid_m is None) != (pid_n is None):
            raise TileLangError("stmatrix: give both pid_m and pid_n (a global store) or neither")
        row0 = col0 = None
        if pid_m is not None:
            if C_buf.ndim != 2:
                raise ShapeMismatchError("stmatrix with pid_m/pid_n stores into a 2-D matrix")
            row0, col0 = convert(pid_m) * self.tiling.block_m, convert(pid_n) * self.tiling.block_n
        b.emit(W.WarpMmaStore(src, C_buf, self.tiling, row0, col0))

    def _check_dtype(self, buf, want, what):
        if as_dtype(buf.dtype) != want:
            raise TileLangError(f"operand {what} `{buf.name}` is {buf.dtype}; the emitter was built for {want}")

    # layouts for fragment-scoped operands -------------------------------------
    def make_mma_load_layout(self, local_buf, matrix="A"):
        raise TileLangError("make_mma_load_layout: fragment-scoped mma operands are not supported; "
                            "use T.alloc_local register arrays with this emitter")

    def make_mma_store_layout(self, local_buf):
        raise TileLangError("make_mma_store_layout: fragment-scoped mma accumulators are not supported; "
                            "use T.alloc_local register arrays with this emitter")
