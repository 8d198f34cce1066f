"""`T.gemm` on sm_90a: warpgroup MMA (`wgmma.mma_async m64nNk16` / `k32`, include/tl_cuda/wgmma.h).

Chosen when A and B are whole 2-D fp16/bf16 tiles, or fp8 ones (e4m3 / e5m2, mixed too:
`m64nNk32`, whose PTX form takes both operands K-major from shared memory only, so A not
transposed and B transposed; swizzles count bytes, so an fp8 tile's 128-byte strip is 128
columns and its 64-byte one 64: a 64-wide K tile). A 16-bit A may also be a fragment that
lives in registers in the accumulator layout. The rows of every shared operand are a
multiple of 128 bytes (one 128-byte swizzle atom; of 64 or 32 for an operand read K-major,
which then takes the 64- or 32-byte swizzle: a 32-wide 16-bit K tile) and the block tile has one
64-row slab per warpgroup, or fewer slabs whose warpgroups then split N (the
accumulator's warp grid is then warpgroup-major: `AccLayout.wg_cols`). The shared operands then get the `tl::sw128` layout
(64-column strips, 16-byte chunks XOR-swizzled by row), which is what the wgmma
descriptors describe and which makes the 16-byte tile copies bank-conflict free.
The accumulator has the same register layout as the mma.sync path with all warps
along M, so every T.Parallel loop and reduction over it is shared with that path.
The instruction wrappers (one asm statement per N) are generated here."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import expr as E
from tilelang.backend.cuda.ops.mma import MmaConfig, gemm_mnk
from tilelang.backend.cuda.target import arch_number

_PTX_TYPE = {"float16": ("f16", "half"), "bfloat16": ("bf16", "__nv_bfloat16"),
             "float8_e4m3fn": ("e4m3", "__nv_fp8_e4m3"), "float8_e5m2": ("e5m2", "__nv_fp8_e5m2")}
_FP8 = ("float8_e4m3fn", "float8_e5m2")


def is_fp8(dtype_name):
    return dtype_name in _FP8


def ptx_type(dtype_name):
    """The PTX operand type of a wgmma element type (f16, bf16, e4m3, e5m2)."""
    return _PTX_TYPE[dtype_name][0]


@dataclass(frozen=True)
class WgmmaConfig(MmaConfig):
    dtype: str = "float16"    # A's element type (and B's, unless dtype_b says otherwise)
    dtype_b: str = ""         # B's element type when it differs (fp8: e4m3 x e5m2)
    trans_A: bool = False
    trans_B: bool = False
    a_regs: bool = False      # A read from a register fragment (wgmma RS)
    swizzle_a: int = 128      # the shared operands' swizzle in bytes (swizzle_bytes)
    swizzle_b: int = 128
    slabs: int = 1            # 64-row slabs per warpgroup (A's rows stored in slab_row order)

    kind = "wgmma"

    # WM = 4 warps per 64-row slab; WN = warpgroups along N (each issues m64 x N/WN):
    # then warp w sits at row w % WM, column w // WM of the grid (AccLayout.wg_cols)
    @property
    def wg_cols(self):
        return self.WN > 1

    @property
    def b_dtype(self):
        return self.dtype_b or self.dtype

    @property
    def inst_k(self):
        """K of one instruction: 32 bytes of each operand row (k16 for 16-bit, k32 for fp8)."""
        return 32 if is_fp8(self.dtype) else 16

    @property
    def inst_n(self):
        """N of one warpgroup's wgmma instruction."""
        return self.N // self.WN

    def layout(self):
        return f"tl::MmaAccLayout<{self.M}, {self.N}, {self.WM}, {self.WN}{', true' if self.wg_cols else ''}>"


def swizzle_bytes(buf):
    """The widest swizzle a 16- or 8-bit shared tile with rows % 8 takes: 128 (sw128)
    when its rows are a multiple of 128 bytes (64 16-bit / 128 fp8 elements), 64 (sw64) for
    64 bytes, 32 (sw32) for 32; else 0. A buffer of more than two dimensions ([stages, R, C]:
    a hand-written pipeline's slots) is that many R x C tiles one after another, each in
    this swizzle. A buffer's swizzle is a function of its shape alone, so every gemm
    reading it agrees."""
    if buf.ndim < 2 or buf.dtype.bits not in (8, 16):
        return 0
    if any(E.const_int_value(d) is None for d in buf.shape[:-2]):
        return 0
    r, c = (E.const_int_value(d) for d in buf.shape[-2:])
    if r is None or c is None or r % 8:
        return 0
    return next((sw for sw in (128, 64, 32) if (c * buf.dtype.itemsize) % sw == 0), 0)


def swizzle_ok(buf, k_major=False):
    """The buffer can be a wgmma operand: sw128 (2-D, rows % 8, 128-byte rows), or, read
    K-major (its rows run along K), also sw64 / sw32 (rows of 64 / 32 bytes)."""
    sw = swizzle_bytes(buf)
    return sw == 128 or (k_major and sw > 0)


def _whole(region):
    return all(E.const_int_value(s) == 0 for s in region.starts) and \
        [E.const_int_value(e) for e in region.extents] == [E.const_int_value(d) for d in region.buffer.shape]


def strip_tile(region, ranges=None, k_major=False):
    """Whether a shared operand region is a whole number of swizzle strips of its buffer,
    which a wgmma descriptor reads as it reads a whole tile: every row (the second-to-last
    dimension whole), columns from a multiple of the strip's width, any one index of the
    leading dimensions (a slot of a [stages, R, C] buffer). The sparse MLA kernels read
    `KV_shared[stage, :, 256:512]` and `Q_shared[:, 512:]` so; the tile then starts
    `operand_offset` elements into the buffer, and its strips lie R * width elements apart
    as the whole tile's do (R: the region's own rows). The first column may depend on loop
    variables (`Q_shared[:, j * 64:(j + 1) * 64]` in a `T.unroll` loop over K tiles: the
    hand warp-specialized FlashMLA) when every term is a multiple of the strip's width and
    `ranges` (id(Var) -> (lo, hi), arith/bounds.py) keeps the strip inside the buffer.
    An operand read K-major (`k_major`) may also be a K range inside one strip, starting on
    an instruction's K step (32 bytes): `A_s[:, j * 16:(j + 1) * 16]`; the descriptor then
    starts inside the strip's rows, as the k steps of a whole tile do (wgmma.h oa / ob)."""
    buf = region.buffer
    sw = swizzle_bytes(buf)
    if not sw or _whole(region):
        return bool(sw)
    shape = [E.const_int_value(d) for d in buf.shape]
    ext = [E.const_int_value(e) for e in region.extents]
    if any(e != 1 for e in ext[:-2]) or ext[-2] != shape[-2] or E.const_int_value(region.starts[-2]) != 0:
        return False
    width = sw // buf.dtype.itemsize
    c0 = _first_column(region.starts[-1], width, ranges)
    if c0 is None and k_major and ext[-1] is not None:
        # every first column a multiple of g, which divides the strip: the range ends in its strip
        g = _column_step(region.starts[-1], width)
        if g and g % (32 // buf.dtype.itemsize) == 0 and ext[-1] <= g:
            c0 = bound_of(region.starts[-1], ranges)
    return c0 is not None and ext[-1] is not None and c0[0] >= 0 and c0[1] + ext[-1] <= shape[-1]


def _column_step(start, width):
    """The largest divisor of `width` that divides every value `start` takes (0: unknown)."""
    from math import gcd
    from tilelang.arith import linear_form
    lin = linear_form(start)
    if lin is None:
        return 0
    g = width
    for _, coef in lin[0].values():
        g = gcd(g, coef)
    return gcd(g, lin[1])


def bound_of(e, ranges):
    from tilelang.arith.bounds import bound
    return bound(e, ranges or {})


def _first_column(start, width, ranges):
    """(lo, hi) of a strip tile's first column when every value it takes is a multiple
    of `width`, else None."""
    c = E.const_int_value(start)
    if c is not None:
        return (c, c) if c % width == 0 else None
    from tilelang.arith import linear_form
    from tilelang.arith.bounds import bound
    lin = linear_form(start)
    if lin is None or lin[1] % width or any(coef % width for _, coef in lin[0].values()):
        return None
    return bound(start, ranges or {})


def operand_offset(region):
    """Elements from a strip tile's buffer to its first element (`strip_tile`): the slot
    of the leading indices, then the whole strips before its first column (an IR expression;
    c0 // width strips of R x width elements: c0 * R, c0 being a multiple of width)."""
    buf = region.buffer
    shape = [E.const_int_value(d) for d in buf.shape]
    width = swizzle_bytes(buf) // buf.dtype.itemsize
    c0 = E.const_int_value(region.starts[-1])
    if c0 is not None:
        off = E.IntImm(c0 // width * shape[-2] * width + c0 % width)
    elif _column_step(region.starts[-1], width) == width:
        off = E.binop("*", region.starts[-1], shape[-2])
    else:   # a K range inside a strip (strip_tile's k_major)
        col = region.starts[-1]
        off = E.binop("+", E.binop("*", E.binop("//", col, width), shape[-2] * width), E.binop("%", col, width))
    tile = shape[-2] * shape[-1]
    for k in reversed(range(buf.ndim - 2)):
        off = E.binop("+", off, E.binop("*", region.starts[k], tile))
        tile *= shape[k]
    return off


def wgmma_config(op, arch, nthreads, ranges=None):
    """The warpgroup-MMA config for this gemm, or None (`wgmma_refusal` says why).
    `nthreads`: the threads that run it (the block, or its thread range: a gemm inside
    `if tx < 128` of a 256-thread kernel is one warpgroup's); `ranges`: the loop
    variables' ranges (strip_tile)."""
    return _choose(op, arch, nthreads, ranges)[0]


def wgmma_refusal(op, arch, nthreads, ranges=None):
    """Why `wgmma_config` gives this gemm no wgmma form (a sentence), or "" when it does."""
    return _choose(op, arch, nthreads, ranges)[1]


def _choose(op, arch, nthreads, ranges):
    """(WgmmaConfig, "") or (None, why)."""
    if arch is None or not arch.startswith("sm_90a") or arch_number(arch) != 90:
        return None, f"wgmma needs the target sm_90a, this one is {arch}"
    if nthreads % 128:
        return None, f"it runs on {nthreads} threads, not whole warpgroups of 128"
    mnk = gemm_mnk(op)
    if mnk is None:
        return None, "its operand shapes are not constant M x K, K x N tiles"
    M, N, K = mnk
    da, db, dc = op.A.buffer.dtype, op.B.buffer.dtype, op.C.buffer.dtype
    fp8 = is_fp8(da.name) and is_fp8(db.name)
    if not fp8 and da is not db or da.name not in _PTX_TYPE or dc.name != "float32":
        return None, (f"wgmma multiplies float16, bfloat16 or fp8 operands into float32; here A is {da}, "
                      f"B {db}, C {dc}")
    nwg = nthreads // 128
    a_regs = op.A.buffer.scope == "local.fragment"
    # fp8 wgmma reads both operands K-major from shared memory (PTX: no transpose
    # immediates, no register A of this layout); the other fp8 gemms keep mma.sync
    if fp8 and (a_regs or op.trans_A or not op.trans_B or K % 32):
        return None, "an fp8 wgmma reads A (not transposed) and B (transposed) from shared memory, K % 32 == 0"
    # warpgroups stack along M (one 64-row slab each); a block tile of fewer rows than
    # that splits N among the warpgroups of each slab instead (MLA decode: 64 rows, 2
    # warpgroups of m64 x N/2); one of more rows gives each warpgroup several slabs
    # (128 rows, 128 threads: the block-sparse GEMM example, FlashAttention's published
    # 128 x 128 tile on 128 threads), A then read K-major from shared memory with its
    # rows in slab_row order, or from registers: slab s from the registers of the
    # fragment's s-th 16-row tile, the rows its accumulator gets
    slabs = M // (64 * nwg) if M % (64 * nwg) == 0 and M > 64 * nwg else 1
    if slabs > 1 and (op.trans_A or not _whole(op.A)):   # rows stored in slab order: whole tiles only
        return None, f"M = {M} is several 64-row slabs per warpgroup, which needs a whole, untransposed A tile"
    if slabs == 1 and (M % 64 or M > 64 * nwg or nwg % (M // 64) or N % (nwg // (M // 64))):
        return None, f"M = {M}, N = {N} do not split into 64-row slabs over {nwg} warpgroup(s)"
    wgn = nwg // (M // 64) if slabs == 1 else 1
    NW = N // wgn
    if NW % 8 or NW > 256 or K % 16:
        return None, f"each warpgroup's N = {NW} is not a multiple of 8 up to 256, or K = {K} not a multiple of 16"
    if a_regs and op.trans_A:
        return None, "a register A operand cannot be transposed"
    # K-major shared operands (A not transposed, B transposed) may be 32 or 16 wide (sw64 /
    # sw32); the register form keeps B at sw128
    k_major = {id(op.A): not op.trans_A, id(op.B): bool(op.trans_B) and not a_regs}
    for name, r in (("B", op.B),) if a_regs else (("A", op.A), ("B", op.B)):
        if r.buffer.scope not in ("shared", "shared.dyn", "local.fragment"):
            return None, f"operand {name} `{r.buffer.name}` is {r.buffer.scope}, not shared memory"
        if getattr(r.buffer, "alias_of", None) is not None:
            return None, f"operand {name} `{r.buffer.name}` is a view of another buffer"
        if not swizzle_ok(r.buffer, k_major[id(r)]):
            return None, (f"operand {name} `{r.buffer.name}` ({'x'.join(map(str, r.buffer.shape))} "
                          f"{r.buffer.dtype}) has no wgmma swizzle: rows must be a multiple of 128 bytes "
                          f"(64 or 32 when read K-major)")
        if not strip_tile(r, ranges, k_major[id(r)]):
            return None, (f"operand {name} `{r.buffer.name}` is read in part, not as whole swizzle strips "
                          f"(all rows, columns from a multiple of {swizzle_bytes(r.buffer) // r.buffer.dtype.itemsize})")
    if a_regs and (not _whole(op.A) or op.A.buffer.ndim != 2):
        return None, f"the register A operand `{op.A.buffer.name}` must be a whole 2-D fragment"
    if not op.trans_B and NW % 64 or op.trans_B and K % 16:
        return None, f"B not transposed needs each warpgroup's N ({NW}) to be a multiple of 64"
    if op.trans_A and M % 64 or not op.trans_A and K % 16:
        return None, f"A transposed needs M ({M}) to be a multiple of 64"
    return WgmmaConfig(M, N, K, 4 * (M // 64 // slabs), wgn, dtype=da.name,
                       dtype_b=db.name if db.name != da.name else "", trans_A=bool(op.trans_A),
                       trans_B=bool(op.trans_B), a_regs=a_regs,
                       swizzle_a=128 if a_regs else swizzle_bytes(op.A.buffer), swizzle_b=swizzle_bytes(op.B.buffer),
                       slabs=slabs), ""


def _operands(n, first=0):
    return ", ".join(f"%{first + i}" for i in range(n))


def instruction_wrappers(cfgs):
    """C++ specializations of tl::WgmmaSS / tl::WgmmaRS for the configs used. The 16-bit
    forms take the operands' major-ness as immediates (imm-trans-a, imm-trans-b); the fp8
    form (k32) has none: both operands are K-major."""
    seen, out = set(), []
    for c in cfgs:
        ptx, ct = _PTX_TYPE[c.dtype]
        ptx_b, ct_b = _PTX_TYPE[c.b_dtype]
        n = c.inst_n
        key = (c.a_regs, n, c.dtype, c.b_dtype, c.trans_A, c.trans_B)
        if key in seen:
            continue
        seen.add(key)
        nd = n // 2
        outs = ", ".join(f'"+f"(d[{i}])' for i in range(nd))
        shape = f"m64n{n}k{c.inst_k}.f32.{ptx}.{ptx_b}"
        tb = int(c.trans_B)
        if not c.a_regs:
            ta = int(c.trans_A)
            trans = "" if is_fp8(c.dtype) else f", {ta}, {1 - tb}"
            body = (f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nd + 2}, 0;\\n"\n'
                    f'      "wgmma.mma_async.sync.aligned.{shape} {{{_operands(nd)}}}, %{nd}, %{nd + 1}, '
                    f'p, 1, 1{trans};\\n}}\\n"\n'
                    f'      : {outs}\n      : "l"(da), "l"(db), "r"(1));')
            targs = f"{n}, {ct}, {ta}, {tb}" + (f", {ct_b}" if ct_b != ct else "")
            out.append(f"template <> struct WgmmaSS<{targs}> {{\n"
                       f"  TL_DEVICE static void run(float* d, unsigned long long da, unsigned long long db) {{\n"
                       f"    {body}\n  }}\n}};")
        else:
            body = (f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nd + 5}, 0;\\n"\n'
                    f'      "wgmma.mma_async.sync.aligned.{shape} {{{_operands(nd)}}}, '
                    f'{{{_operands(4, nd)}}}, %{nd + 4}, p, 1, 1, {1 - tb};\\n}}\\n"\n'
                    f'      : {outs}\n      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));')
            out.append(f"template <> struct WgmmaRS<{n}, {ct}, {tb}> {{\n"
                       f"  TL_DEVICE static void run(float* d, const unsigned* a, unsigned long long db) {{\n"
                       f"    {body}\n  }}\n}};")
    if not out:
        return ""
    return "namespace tl {\n" + "\n".join(out) + "\n}  // namespace tl\n"
