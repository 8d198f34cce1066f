"""register_layouts.py: which fragments that are not gemm accumulators get register
layouts, and which stay in LDS because some use fits no layout (no hipcc)."""
import tilelang.language as T
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.backend.hip.plan import plan_kernel
from tests.backend.hip.helpers import hip_source


def _kinds(func, arch="gfx90a"):
    low, src, _ = hip_source(func, arch)
    launches = []
    walk(low.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    plan = plan_kernel(launches[0], arch)
    return {b.name: plan.regs[k].kind if k in plan.regs else "lds" for k, b in plan.buffers.items()}, plan, src


def _attn_like(transposed_p=False, block_level_row=False):
    @T.prim_func
    def attn(A: T.Tensor((64, 64), "float16"), V: T.Tensor((64, 64), "float16"), Y: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 64), "float16")
            Vs = T.alloc_shared((64, 64), "float16")
            s = T.alloc_fragment((64, 64), "float32")
            p = T.alloc_fragment((64, 64), "float16")
            o = T.alloc_fragment((64, 64), "float32")
            m = T.alloc_fragment((64,), "float32")
            T.copy(A, As)
            T.copy(V, Vs)
            T.gemm(As, As, s, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.reduce_max(s, m, dim=1)
            if block_level_row:
                m[0] = 0.0
            for i, j in T.Parallel(64, 64):
                if transposed_p:
                    p[j, i] = T.exp(s[i, j] - m[i])
                else:
                    p[i, j] = T.exp(s[i, j] - m[i])
            T.gemm(p, Vs, o, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(o, Y)
    return attn


def test_p_and_row_vector_in_registers():
    kinds, plan, src = _kinds(_attn_like())
    assert kinds == {"As": "lds", "Vs": "lds", "s": "acc", "p": "tile", "o": "acc", "m": "rows"}
    ts, to = (plan.tilings[k] for k, b in plan.buffers.items() if b.name in ("s", "o"))
    assert ts == to and ts.WN == 1           # one tiling for the linked gemms, whole rows per wave


def test_transposed_index_keeps_p_in_lds():
    kinds, _, src = _kinds(_attn_like(transposed_p=True))
    assert kinds["p"] == "lds" and kinds["m"] == "rows"
    assert "__builtin_amdgcn_mfma" in src


def test_block_level_access_keeps_a_row_vector_in_lds():
    kinds, _, _ = _kinds(_attn_like(block_level_row=True))
    assert kinds["m"] == "lds" and kinds["p"] == "tile"
