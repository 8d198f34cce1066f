"""The HIP pipeline and kernel plan, read off the IR and the plan objects (no hipcc)."""
import re

import tilelang.language as T
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.backend.hip.plan import plan_kernel
from tests.kernels import gemm_func
from tests.backend.hip.helpers import hip_source


def _nodes(func, cls):
    out = []
    walk(func.body, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def test_pipeline_keeps_gemm_reduce_and_pipelined_loops():
    low, src, _ = hip_source(gemm_func())
    assert len(_nodes(low, TO.Gemm)) == 1
    assert not _nodes(low, TO.Copy) and not _nodes(low, TO.Fill)          # lowered to T.Parallel nests
    kinds = {f.kind for f in _nodes(low, S.For)}
    assert S.PIPELINED in kinds and S.PARALLEL in kinds
    # num_stages=2: the next A and B tiles are loaded into registers during the MFMA
    assert "register double-buffering of 2 tile copies" in src


def test_pipelined_with_one_stage_is_a_serial_loop():
    _, src, _ = hip_source(gemm_func(), "gfx90a")
    from tests.backend.cuda.kernels import gemm
    _, src1, _ = hip_source(gemm(128, 128, 64, 64, 64, 32, stages=1))
    assert "double-buffering" not in src1 and src1.count("__syncthreads();") == 2


def test_plan_places_accumulator_in_registers_and_pads_the_a_operand():
    low, src, meta = hip_source(gemm_func(M=256, N=256, K=128, bm=128, bn=128, bk=32))
    launch = _nodes(low, S.KernelLaunch)[0]
    plan = plan_kernel(launch, "gfx90a")
    bufs = {b.name: b for b in plan.buffers.values()}
    t = plan.tilings[id(bufs["C_local"])]
    assert (t.shape.m, t.WM, t.WN, t.MT, t.NT) == (32, 1, 2, 4, 2)   # 128 threads = 2 waves
    assert plan.in_lds(bufs["A_shared"]) and plan.in_lds(bufs["B_shared"])
    # A (128 x 32 fp16) is read along its rows by MFMA: rows padded by one 8-byte run
    assert plan.pitches == {id(bufs["A_shared"]): 36}
    assert plan.lds_bytes() == 128 * 36 * 2 + 32 * 128 * 2
    assert meta["kernels"][0]["mfma"] == ["32x32x8"] and meta["kernels"][0]["threads"] == [128, 1, 1]
    assert "__builtin_amdgcn_mfma_f32_32x32x8f16" in src


def test_non_accumulator_fragments_live_in_lds():
    @T.prim_func
    def rowmax(X: T.Tensor((64, 128), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((64, 128), "float32")
            m = T.alloc_fragment((64,), "float32")
            T.copy(X, x)
            T.reduce_max(x, m, dim=1)
            T.copy(m, Y)
    low, src, meta = hip_source(rowmax)
    plan = plan_kernel(_nodes(low, S.KernelLaunch)[0], "gfx90a")
    assert not plan.tilings and all(plan.in_lds(b) for b in plan.buffers.values())
    # 64 outputs of a 128-long row: groups of 64 lanes (one wavefront), butterflies 32 .. 1
    for off in (32, 16, 8, 4, 2, 1):
        assert f"tl::shfl_xor(tl_racc[0], {off});" in src
    assert "tl_ob += 2" in src     # two groups of 64 lanes in a block of 128


def test_reductions_of_an_accumulator():
    """Row reductions stay in registers (in-lane, then a shuffle between the 2 lane groups
    holding a row in the transposed 32x32 MFMA layout, one LDS array for the 2 waves
    sharing a row) into row vectors in registers; a column reduction reads the accumulator
    staged once in LDS into a fragment in LDS."""
    @T.prim_func
    def attn_like(A: T.Tensor((64, 64), "float16"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256) as bx:
            S_ = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            m = T.alloc_fragment((64,), "float32")
            s = T.alloc_fragment((64,), "float32")
            c = T.alloc_fragment((64,), "float32")
            T.copy(A, S_)
            T.gemm(S_, S_, acc, transpose_B=True, clear_accum=True)
            T.reduce_max(acc, m, dim=1)
            T.reduce_sum(acc, s, dim=1)
            T.reduce_sum(acc, c, dim=0)
            for i in T.Parallel(64):
                Y[i] = m[i] + s[i] + c[i]
    low, src, _ = hip_source(attn_like)
    plan = plan_kernel(_nodes(low, S.KernelLaunch)[0], "gfx90a")
    kinds = {b.name: plan.regs[k].kind if k in plan.regs else "lds" for k, b in plan.buffers.items()}
    assert kinds == {"S_": "lds", "acc": "acc", "m": "rows", "s": "rows", "c": "lds"}
    assert src.count("in registers: __shfl_xor over the 2 lanes holding a row, LDS across 2 waves") == 2
    offsets = re.findall(r"tl::shfl_xor\(tl_racc\w*\[0\], (\d+)\);", src)
    assert offsets[:2] == ["32", "32"] and offsets[2:] == ["32", "16", "8", "4", "2", "1"]   # rows; column
    # Y's store from the replicated row vectors: one replica (lane group 0, wave column 0)
    assert "if (tl_tid % 64 < 32 && (tl_tid / 64) < 2) Y[" in src
    assert src.count("row partials of each wave") == 1
    assert src.count("acc staged for reductions") == 1


def _fa_plan(dim, block_M, threads=256):
    from tests.examples.test_examples_cuda import _example
    f = _example("flash_attention").flash_attention.get_tir(1, 1, 256, 256, dim, block_M=block_M, threads=threads)
    low, src, meta = hip_source(f)
    plan = plan_kernel(_nodes(low, S.KernelLaunch)[0], "gfx90a")
    return plan, {b.name: b for b in plan.buffers.values()}, src


def test_flash_attention_fragments_in_registers():
    """FullRow on 4 waves: one 16x16x16 tiling for S and O (a 16-row strip per wave, whole
    rows), P's cast in S's layout read by the second gemm from registers, the softmax
    statistics one register per strip; only the shared tiles are in LDS."""
    plan, bufs, src = _fa_plan(64, 64)
    kinds = {n: plan.regs[id(b)].kind if id(b) in plan.regs else "lds" for n, b in bufs.items()}
    assert kinds == {"Q_shared": "lds", "K_shared": "lds", "V_shared": "lds", "O_shared": "lds", "acc_s": "acc",
                     "acc_s_cast": "tile", "acc_o": "acc", "m_i": "rows", "m_prev": "rows", "alpha": "rows",
                     "row_sum": "rows", "l_i": "rows"}
    t = plan.tilings[id(bufs["acc_s"])]
    assert (t.shape.m, t.WM, t.WN) == (16, 4, 1) and plan.regs[id(bufs["acc_s_cast"])].tiling == t
    assert re.search(r"tl_a\w*\[t\] = tl::halfx4\{acc_s_cast\[", src)    # the register A operand
    assert "tl::half_t m_i[1];" not in src and "float m_i[1];" in src
    assert not plan.lds_arena                                  # fits without sharing LDS


def test_flash_attention_d128_shares_lds():
    """Head dim 128, 128x64 blocks: Q, K, V and O tiles need 96 KiB side by side; O is
    live only after the loop that last reads Q, so it takes Q's bytes, and the rows lose
    their padding to fit 64 KiB exactly; O's write waits for a barrier after Q's reads."""
    plan, bufs, src = _fa_plan(128, 128)
    off = plan.lds_offsets
    assert off[id(bufs["O_shared"])] == off[id(bufs["Q_shared"])]
    assert len({off[id(bufs[n])] for n in ("Q_shared", "K_shared", "V_shared")}) == 3
    assert plan.lds_arena == plan.lds_bytes() == 65536 and not plan.pitches
    assert plan.lds_key(bufs["O_shared"]) == plan.lds_key(bufs["Q_shared"]) != plan.lds_key(bufs["K_shared"])
    assert "char tl_lds[65536];" in src and "O_shared = (tl::half_t*)(tl_lds + " in src


def test_lds_reuse_live_ranges():
    from tilelang.backend.hip.lds_reuse import live_ranges, plan_lds_reuse

    @T.prim_func
    def phases(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=64) as bx:
            X = T.alloc_shared((64, 64), "float32")
            Y = T.alloc_shared((64, 64), "float32")
            Z = T.alloc_shared((32, 64), "float32")
            T.copy(A, X)
            T.copy(X, Y)
            T.copy(Y, B)
            T.copy(A[0:32, :], Z)
            T.copy(Z, B[0:32, :])
    low, _, _ = hip_source(phases)
    launch = _nodes(low, S.KernelLaunch)[0]
    plan = plan_kernel(launch, "gfx90a")
    bufs = {b.name: id(b) for b in plan.buffers.values()}
    r = live_ranges(launch.body, {k: k for k in bufs.values()})
    assert r[bufs["X"]][1] == r[bufs["Y"]][0] and r[bufs["Y"]][1] < r[bufs["Z"]][0]
    sizes = {bufs["X"]: 16384, bufs["Y"]: 16384, bufs["Z"]: 8192}
    off, arena = plan_lds_reuse(plan, launch.body, sizes)
    assert off[bufs["X"]] != off[bufs["Y"]] and arena == 32768   # Z fits in X's bytes (X dead by then)
    assert off[bufs["Z"]] == off[bufs["X"]]


def test_lds_over_budget_names_the_largest_buffers():
    import pytest
    from tilelang.ir.errors import LoweringError

    @T.prim_func
    def big(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16")):
        with T.Kernel(1, threads=256) as bx:
            X = T.alloc_shared((128, 256), "float16")
            Y = T.alloc_shared((64, 256), "float16")
            T.copy(A[0:128, :], X)
            T.copy(A[0:64, :], Y)
            for i, j in T.Parallel(64, 256):
                B[i, j] = X[i, j] + Y[i, j]
    with pytest.raises(LoweringError) as e:
        hip_source(big)
    text = str(e.value)
    assert "98304 bytes of LDS" in text and "`X` 65536 bytes, `Y` 32768 bytes" in text
    assert "with T.Kernel(1, threads=256)" in text   # points at the kernel's line
