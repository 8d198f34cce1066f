"""The warpgroup (sm_90a wgmma) emitter of hand-written GEMMs, atom by atom: the
published `WGMMATensorCoreIntrinEmitter` (`tilelang.cuda.language`), built on our
per-thread wgmma intrinsics (`T.ptx_wgmma_ss`, descriptors, warpgroup fences).

One warpgroup (`block_row_warps x block_col_warps` = 4 warps) computes C (block_M x
block_N) from shared A and B. One atom is one `wgmma.m64nNkK`: atom
(m, n, ki) reads A rows 64m.., B columns N*n.., K step ki, through descriptors whose
start address the atom advances (tilelang/layout/wgmma_descriptor.py says by how much).
The accumulator is this thread's registers (`T.alloc_local((emitter.wgmma_accum_regs,))`):
atom (m, n) owns registers (m * wgmma_num_inst_n + n) * N/2 on; register r of thread
t in warp w holds row 16 w + (t % 32) / 4 + 8 ((r / 2) % 2), column 8 (r / 4) + 2 (t % 4)
+ r % 2 of its 64 x N tile."""
from __future__ import annotations

from math import gcd

from tilelang.ir import builder as _builder
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.dtypes import as_dtype
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import convert
from tilelang.language import descriptor as D
from tilelang.language import warpgroup as WG
from tilelang.language.tensor_core_ptx import ptx_wgmma_ss
from tilelang.layout.wgmma_descriptor import compute_gmma_descriptor

def _emit(value):
    """A call of our T intrinsics as a statement of the kernel body (the emitter runs
    inside it, where a bare expression statement would be dropped)."""
    if value is not None:
        _builder.require("the wgmma emitter").emit(S.Evaluate(value))


_PTX = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "tfloat32": "tf32", "int8": "s8", "uint8": "u8",
        "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2", "int32": "s32"}


class WGMMATensorCoreIntrinEmitter:
    WARP_SIZE = 32
    M_DIM = 64

    def __init__(self, a_dtype="float16", b_dtype="float16", accum_dtype="float16", a_transposed=False,
                 b_transposed=False, block_row_warps=4, block_col_warps=1, warp_row_tiles=16, warp_col_tiles=64,
                 chunk=16, reduce_k=1, num_elems_per_byte=1, is_m_first=False, thread_var=None):
        self.a_dtype, self.b_dtype, self.accum_dtype = (as_dtype(d) for d in (a_dtype, b_dtype, accum_dtype))
        for d in (self.a_dtype, self.b_dtype, self.accum_dtype):
            if d.name not in _PTX:
                raise TileLangError(f"WGMMATensorCoreIntrinEmitter: wgmma has no {d} operand")
        if reduce_k != 1 or num_elems_per_byte != 1:
            raise TileLangError("WGMMATensorCoreIntrinEmitter: reduce_k and packed sub-byte operands are not supported")
        self.a_transposed, self.b_transposed = bool(a_transposed), bool(b_transposed)
        self.block_row_warps, self.block_col_warps = block_row_warps, block_col_warps
        self.warp_row_tiles, self.warp_col_tiles, self.chunk = warp_row_tiles, warp_col_tiles, chunk
        self.thread_var = thread_var
        self.block_M, self.block_N = block_row_warps * warp_row_tiles, block_col_warps * warp_col_tiles
        if block_row_warps * block_col_warps != 4 or self.block_M % 64:
            raise TileLangError(f"WGMMATensorCoreIntrinEmitter: the atoms run on one warpgroup (4 warps) over "
                                f"64-row tiles; {block_row_warps} x {block_col_warps} warps cover {self.block_M} rows",
                                hint="several warpgroups: one emitter each, on their own rows of C")
        self.micro_size_k = 256 // self.a_dtype.bits if self.a_dtype.bits < 32 else 8
        if chunk % self.micro_size_k:
            raise TileLangError(f"WGMMATensorCoreIntrinEmitter: chunk {chunk} is not a multiple of the wgmma K "
                                f"step {self.micro_size_k}")
        # the widest legal N that tiles the block's N: a multiple of 16 up to 256, else a divisor of it
        n = next((c for c in range(256, 15, -16) if self.block_N % c == 0), gcd(self.block_N, 256))
        self.wgmma_inst_n = n
        if n % 8:
            raise TileLangError(f"WGMMATensorCoreIntrinEmitter: N = {self.block_N} has no wgmma width (multiples of 8)")
        self.wgmma_prefix = f"m64n{n}k{self.micro_size_k}"
        self.a_shared_layout = self.b_shared_layout = None

    # shapes ---------------------------------------------------------------------
    @property
    def wgmma_num_inst_m(self):
        return self.block_M // 64

    @property
    def wgmma_num_inst_n(self):
        return self.block_N // self.wgmma_inst_n

    @property
    def wgmma_num_k_atoms(self):
        return self.chunk // self.micro_size_k

    @property
    def wgmma_accum_regs(self):
        """Accumulator registers each thread holds."""
        return self.wgmma_num_inst_m * self.wgmma_num_inst_n * self.wgmma_inst_n // 2

    # shared layouts and descriptors ---------------------------------------------
    def _assign_a_shared_layout(self, layout):
        self.a_shared_layout = layout

    def _assign_b_shared_layout(self, layout):
        self.b_shared_layout = layout

    def _params(self, region, layout, mn_last, what):
        if layout is None:
            raise TileLangError(f"{what}: give the shared layout first (_assign_{what[-6].lower()}_shared_layout)")
        try:
            return compute_gmma_descriptor(layout, region, transposed=mn_last,
                                           micro_size_k=self.micro_size_k)
        except ValueError as e:
            raise TileLangError(f"{what}: {e}") from None

    def compute_wgmma_a_desc_params(self, A_region):
        # A is (M, K), K-major, unless transposed: (K, M)
        return self._params(A_region, self.a_shared_layout, self.a_transposed, "compute_wgmma_a_desc_params")

    def compute_wgmma_b_desc_params(self, B_region):
        # B is (K, N), N contiguous, unless transposed: (N, K), K-major
        return self._params(B_region, self.b_shared_layout, not self.b_transposed, "compute_wgmma_b_desc_params")

    @staticmethod
    def _init(desc, region, params):
        buf = region.buffer if isinstance(region, BufferRegion) else region
        if not isinstance(buf, Buffer):
            raise TileLangError(f"init_wgmma_desc: expected a shared buffer, got {type(region).__name__}")
        _emit(D.initialize_wgmma_descriptor(desc, buf.access_ptr("r"), params.swizzle_mode.wgmma_layout_type(),
                                            params.leading_byte_offset, params.stride_byte_offset))
        if params.slice_byte_offset:
            _emit(D.increase_descriptor_offset(desc, params.slice_byte_offset))

    def init_wgmma_a_desc(self, desc_a, A_region, params):
        self._init(desc_a, A_region, params)

    def init_wgmma_b_desc(self, desc_b, B_region, params):
        self._init(desc_b, B_region, params)

    # warpgroup ordering -----------------------------------------------------------
    def wgmma_fence_c(self, C_buf):
        _emit(WG.warpgroup_fence_operand(C_buf))

    def wgmma_fence_a(self, A_buf):
        _emit(WG.warpgroup_fence_operand(A_buf))

    def wgmma_arrive(self):
        _emit(WG.warpgroup_arrive())

    def wgmma_commit(self):
        _emit(WG.warpgroup_commit_batch())

    def wgmma_wait(self, n=0):
        _emit(WG.warpgroup_wait(n))

    # atoms ----------------------------------------------------------------------------
    def wgmma_ss_atom(self, desc_a, desc_b, C_buf, inst_m_idx, inst_n_idx, ki, a_params, b_params, scale_out=True):
        """C atom (m, n) (+)= A rows 64 m.. x B columns N n.., K step ki."""
        m, n, k = (convert(x) for x in (inst_m_idx, inst_n_idx, ki))
        a_off = a_params.atom_byte_offset(m * 64, k * self.micro_size_k)
        b_off = b_params.atom_byte_offset(n * self.wgmma_inst_n, k * self.micro_size_k)
        c_off = (m * self.wgmma_num_inst_n + n) * (self.wgmma_inst_n // 2)
        _emit(ptx_wgmma_ss(self.accum_dtype, self.wgmma_prefix, a_params.is_k_major, b_params.is_k_major,
                     _PTX[self.a_dtype.name], _PTX[self.b_dtype.name], _PTX[self.accum_dtype.name],
                     desc_a, a_off // 16, desc_b, b_off // 16, C_buf, c_off, scale_out, True, True))

    def make_mma_store_layout(self, local_buf):
        raise TileLangError("WGMMATensorCoreIntrinEmitter.make_mma_store_layout: a fragment accumulator is not "
                            "supported with the atom emitter; hold C in this thread's registers",
                            hint="C_local = T.alloc_local((emitter.wgmma_accum_regs,), accum_dtype)")


class TCGEN05TensorCoreIntrinEmitter:
    """sm_100's tcgen05 (UMMA, tensor memory) emitter: the name is importable, building
    one is a clear error -- this package issues no sm_100 instructions."""

    def __init__(self, *args, **kwargs):
        from tilelang.ir.errors import TargetFeatureError
        raise TargetFeatureError("TCGEN05TensorCoreIntrinEmitter: tcgen05 MMA (tensor memory, sm_100) is not "
                                 "implemented here; the CUDA backend issues sm_80 mma.sync and sm_90a wgmma",
                                 hint="on Hopper use WGMMATensorCoreIntrinEmitter or T.gemm")
