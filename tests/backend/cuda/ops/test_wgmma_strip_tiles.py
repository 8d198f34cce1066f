"""wgmma on strip tiles of a shared buffer (ops/wgmma.py `strip_tile`, `operand_offset`):
a slot of a [stages, R, C] buffer and a column range starting on a swizzle strip, as the
published sparse MLA kernels (deepseek_v32) read `KV_shared[stage, :, 256:512]` and
`Q_shared[:, 512:]`. They ran on mma.sync before (only whole 2-D tiles took wgmma); the
hand-written sparse MLA forward was 5x slower than the published package for it.
Checks of the region rule and the offsets, of the plan and code (wgmma, each operand's
pointer, the 3-D buffer swizzled slot by slot) and the SASS; the kernel against torch on
the GPU, and the published example against its reference where the examples are present."""
import importlib.util
import os
import re

import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E
from tilelang.ir import tile_ops as TO
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass

D, DT = 128, 64          # "latent" and "rope" columns of a row: 192, three 64-column strips


def strip_tile_attention(nblk):
    """S[b] = Q KV[b]^T (its two column ranges as two gemms); O = sum_b bf16(S[b]) KV[b][:, 64:].
    KV[b] lands in slot b % 2 of a [2, 64, 192] buffer; every gemm reads a strip tile."""
    dt = "bfloat16"

    @T.prim_func
    def main(Q: T.Tensor((64, D + DT), dt), KV: T.Tensor((nblk, 64, D + DT), dt),
             S: T.Tensor((nblk, 64, 64), "float32"), O: T.Tensor((64, D), "float32")):
        with T.Kernel(1, threads=128):
            Q_s = T.alloc_shared((64, D + DT), dt)
            KV_s = T.alloc_shared((2, 64, D + DT), dt)
            P_s = T.alloc_shared((64, 64), dt)
            acc_s = T.alloc_fragment((64, 64), "float32")
            acc_o = T.alloc_fragment((64, D), "float32")
            T.copy(Q, Q_s)
            T.clear(acc_o)
            for b in T.serial(nblk):
                T.copy(KV[b, :, :], KV_s[b % 2, :, :])
                T.clear(acc_s)
                T.gemm(Q_s[:, :D], KV_s[b % 2, :, :D], acc_s, transpose_B=True)
                T.gemm(Q_s[:, D:], KV_s[b % 2, :, D:], acc_s, transpose_B=True)
                T.copy(acc_s, S[b, :, :])
                T.copy(acc_s, P_s)
                T.gemm(P_s, KV_s[b % 2, :, DT:], acc_o)
            T.copy(acc_o, O)
    return main


def _gemms(pf):
    out = []
    from tilelang.ir.visitor import walk
    walk(pf.body, lambda n: out.append(n) if isinstance(n, TO.Gemm) else None)
    return out


def test_strip_tile_rule_and_offsets():
    from tilelang.backend.cuda.ops.wgmma import operand_offset, strip_tile, swizzle_bytes
    from tilelang.arith.simplify import simplify
    qk, rope, pv = _gemms(strip_tile_attention(3))
    kv = qk.B.buffer
    assert swizzle_bytes(kv) == 128   # [2, 64, 192]: each slot a sw128 tile
    assert all(strip_tile(r) for g in (qk, rope, pv) for r in (g.A, g.B))
    b = next(iter(v for v in _free_vars(qk.B.starts[0])))
    # slot (b % 2) * 64 * 192, then whole 64-column strips of 64 rows
    for region, strips in ((qk.B, 0), (rope.B, 2), (pv.B, 1)):
        off = simplify(operand_offset(region))
        for bv in (0, 1, 2, 5):
            assert _eval(off, {b: bv}) == (bv % 2) * 64 * 192 + strips * 64 * 64
    assert E.const_int_value(simplify(operand_offset(rope.A))) == 2 * 64 * 64


def _free_vars(e):
    from tilelang.ir.visitor import collect_vars
    return collect_vars(e)


def _eval(e, env):
    from tilelang.arith.simplify import simplify
    from tilelang.ir.visitor import substitute
    return E.const_int_value(simplify(substitute(e, {k: E.IntImm(v) for k, v in env.items()})))


def test_regions_off_the_strips_are_not_strip_tiles():
    from tilelang.backend.cuda.ops.wgmma import strip_tile
    dt = "bfloat16"

    @T.prim_func
    def main(A: T.Tensor((64, 192), dt)):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((2, 64, 192), dt)
            acc = T.alloc_fragment((64, 64), "float32")
            acc2 = T.alloc_fragment((32, 64), "float32")
            T.gemm(s[0, :, 32:96], s[1, :, 64:128], acc, transpose_B=True)   # column 32: inside a strip
            T.gemm(s[0, 0:32, :64], s[1, :, 64:128], acc2, transpose_B=True)  # part of the rows
    a, b = _gemms(main)
    assert not strip_tile(a.A) and strip_tile(a.B)
    assert not strip_tile(b.A)


@needs_nvrtc
def test_code_reads_strip_tiles_with_wgmma():
    src = tilelang.compile(strip_tile_attention(3), target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::gemm_ss<" not in src, src   # no mma.sync
    slot = "(((b) & 1) * 12288)"   # (b % 2) * 64 * 192
    # Q K^T over the first two strips issues, the third strip's gemm waits for both groups
    assert f"tl::wgmma_ss_issue<64, 64, 128, false, true, __nv_bfloat16>(Q_s, KV_s + {slot}, acc_s, tl_tid);" in src
    assert f"tl::wgmma_gemm_ss<64, 64, 64, false, true, __nv_bfloat16>(Q_s + 8192, KV_s + ({slot} + 8192), " \
        "acc_s, tl_tid);" in src, src
    assert f"tl::wgmma_gemm_ss<64, 128, 64, false, false, __nv_bfloat16>(P_s, KV_s + ({slot} + 4096), " \
        "acc_o, tl_tid);" in src, src
    # the slot's elements are written in its swizzle, 16 bytes at a time (cp.async)
    assert f"tl::cp_async_gs<16>(&KV_s[{slot} + tl::sw128<64>(" in src, src


@needs_sass
def test_sass_is_hgmma_without_spills():
    sass = tilelang.compile(strip_tile_attention(3), target="cuda -arch=sm_90a").get_sass()
    assert "HGMMA.64x64x16.F32.BF16" in sass and "HGMMA.64x128x16.F32.BF16" in sass
    assert not re.search(r"\bHMMA\b", sass)
    assert not re.search(r"\b(STL|LDL)\b", sass)


@pytest.mark.gpu
@pytest.mark.parametrize("nblk", [1, 3])
def test_strip_tiles_against_torch(nblk):
    import torch
    kern = tilelang.compile(strip_tile_attention(nblk), target="cuda")
    q = torch.randn(64, D + DT, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(nblk, 64, D + DT, device="cuda", dtype=torch.bfloat16)
    s = torch.empty(nblk, 64, 64, device="cuda", dtype=torch.float32)
    o = torch.empty(64, D, device="cuda", dtype=torch.float32)
    kern(q, kv, s, o)
    s_ref = torch.einsum("md,bnd->bmn", q.float(), kv.float())
    torch.testing.assert_close(s, s_ref, rtol=1e-3, atol=1e-2)
    o_ref = torch.einsum("bmn,bnd->md", s.to(torch.bfloat16).float(), kv[:, :, DT:].float())
    torch.testing.assert_close(o, o_ref, rtol=1e-3, atol=5e-2)


_EXAMPLES = os.environ.get("TL_PUB_EXAMPLES", os.path.join(os.path.dirname(__file__), *[".."] * 4, ".pub", "examples"))
_PIPELINED = os.path.join(_EXAMPLES, "deepseek_v32", "sparse_mla_fwd_pipelined.py")


@pytest.mark.gpu
@pytest.mark.skipif(not os.path.exists(_PIPELINED), reason="the published examples are not here (TL_PUB_EXAMPLES)")
def test_published_sparse_mla_fwd_pipelined_against_its_reference(monkeypatch):
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cuda")   # (the test session's default is the CPU)
    spec = importlib.util.spec_from_file_location("sparse_mla_fwd_pipelined", _PIPELINED)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    # the regression suite's sizes (S=256, SKV=512, H=64, topk=256), fewer queries
    m.test_sparse_mla_fwd_pipelined(B=1, S=64, SKV=512, H=64, HKV=1, DQK=576, DV=512, topk=256,
                                    q_start_s_index=1024, check_correctness=True)


def test_placed_layout_of_a_slotted_buffer_is_one_tile_per_slot():
    """layout/shared.py placed_layout of the [2, 64, 192] buffer: slot s is the sw128 tile of
    a [64, 192] buffer, s * 64 * 192 elements on."""
    import numpy as np
    from tilelang.backend.cuda.layout.shared import placed_layout, sw128_layout
    from tilelang.backend.cuda.plan.kernel import Placement
    qk, _, _ = _gemms(strip_tile_attention(3))
    kv, q = qk.B.buffer, qk.A.buffer   # [2, 64, 192] and [64, 192]
    off = np.asarray(placed_layout(kv, Placement("smem", None, swizzle=128)).offsets())
    tile = np.asarray(sw128_layout(q).offsets())
    assert off.shape == (2, 64, 192)
    assert np.array_equal(off[0], tile) and np.array_equal(off[1], tile + 64 * 192)
