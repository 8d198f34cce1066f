"""The HIP pipeline and kernel plan, read off the IR and the plan objects (no hipcc)."""
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
    """Row reductions stay in registers (shuffles over the 32 lanes of a row of the 32x32
    MFMA layout, one LDS array for the 2 waves sharing a row); a column reduction reads
    the accumulator staged once in LDS."""
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
    _, src, _ = hip_source(attn_like)
    assert src.count("in registers: __shfl_xor over the 32 lanes of a row, LDS across 2 waves") == 2
    assert src.count("row partials of each wave") == 1
    assert src.count("acc staged for reductions") == 1
