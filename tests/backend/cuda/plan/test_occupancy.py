"""plan/occupancy.py (`plan_streaming_occupancy`, TILELANG_CUDA_STREAMING_OCCUPANCY=1): a
memory-bound kernel asks ptxas for a full SM of blocks (`T.annotate_min_blocks_per_sm(n)` in
the IR after the pass, `__launch_bounds__(T, n)` in the source); a gemm kernel, a user's own
annotation and the switch's default are left alone; where the cap makes ptxas spill, the build
compiles without it. GPU results against torch: tests/backend/cuda/test_memory_bound.py."""

import tilelang.language as T
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.options import OPTIONS, CudaOptions
from tilelang.backend.cuda.plan.occupancy import (plan_streaming_occupancy, full_occupancy_blocks,
                                                  spilling_entries, drop_streaming_caps, fit_streaming_caps,
                                                  streaming_cap)
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda import kernels as KS
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build, load_example

ON = {"TILELANG_CUDA_STREAMING_OCCUPANCY": "1"}


def _after(func, env=ON, arch="sm_90a"):
    """The printed IR after plan_streaming_occupancy with the switches of `env`."""
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS, OPTIONS: CudaOptions.from_config(None, arch, env)})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    k = P.PASSES.index(plan_streaming_occupancy)
    return func_str(plan_streaming_occupancy(run_passes(func, P.PASSES[:k], ctx), ctx))


def rms_norm(M=64, N=4096, block_M=1, block_N=4096, threads=256):
    rn = load_example("rms_norm", "occupancy")
    return rn.rms_norm.get_tir(M, N, block_M=block_M, block_N=block_N, threads=threads, dtype=T.float16)


def test_blocks_that_fill_an_sm():
    assert full_occupancy_blocks(256, 64, "sm_90a") == 8
    assert full_occupancy_blocks(128, 12 * 1024, "sm_90a") == 16      # 16 x 13 KB fit in 228 KB
    assert full_occupancy_blocks(128, 48 * 1024, "sm_90a") == 4       # shared memory decides
    assert full_occupancy_blocks(256, 0, "sm_86") == 6                # 1536 threads an SM


def test_a_streaming_kernel_asks_for_a_full_sm():
    assert "T.annotate_min_blocks_per_sm(8)" in _after(rms_norm())
    assert "T.annotate_min_blocks_per_sm(16)" in _after(KS.elementwise_add(N=4096))   # 128 threads


def test_off_by_default_and_not_for_gemms_or_a_users_own_bound():
    assert "annotate_min_blocks_per_sm" not in _after(rms_norm(), env={})
    assert "annotate_min_blocks_per_sm" not in _after(KS.gemm())

    @T.prim_func
    def own(A: T.Tensor((1024,), "float32"), B: T.Tensor((1024,), "float32")):
        with T.Kernel(8, threads=128) as bx:
            T.annotate_min_blocks_per_sm(2)
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 2.0
    text = _after(own)
    assert "T.annotate_min_blocks_per_sm(2)" in text and "(16)" not in text


def test_ptxas_spill_report():
    log = ("ptxas info    : Compiling entry function 'a' for 'sm_90a'\n"
           "ptxas info    : Function properties for a\n"
           "ptxas         .     48 bytes stack frame, 52 bytes spill stores, 60 bytes spill loads\n"
           "ptxas info    : Function properties for b\n"
           "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n")
    assert spilling_entries(log) == {"a"}
    src = 'extern "C" __global__ void __launch_bounds__(256, 8) a(int* x) {}\n' \
          'extern "C" __global__ void __launch_bounds__(256, 8) b(int* x) {}\n'
    assert drop_streaming_caps(src, {"a"}) == src.replace("(256, 8) a(", "(256) a(")


@needs_nvrtc
def test_the_cap_reaches_ptxas_and_is_dropped_where_it_spills(monkeypatch):
    from tilelang.backend.cuda.host.nvrtc import resource_usage
    import re
    monkeypatch.setenv("TILELANG_CUDA_STREAMING_OCCUPANCY", "1")
    art = build(rms_norm())                          # 39 registers uncapped: 6 blocks an SM
    assert "__launch_bounds__(256, 8)" in art.source
    usage = resource_usage(art.binary)
    if usage:
        regs = int(re.search(r"REG:(\d+)", usage).group(1))
        assert regs <= 32 and "STACK:0" in usage, usage   # a full SM of blocks, no spill
    # 4 rows of 1024 in 4 chunks: 48 registers uncapped, spills at 32: compiled without the cap
    monkeypatch.setenv("TILELANG_CUDA_OCCUPANCY_SEARCH", "0")
    art = build(rms_norm(block_M=4, block_N=1024))
    assert "__launch_bounds__(256) " in art.source
    assert art.meta.get("streaming_occupancy_dropped") == [art.entry]
    usage = resource_usage(art.binary)
    assert not usage or "STACK:0" in usage, usage


@needs_nvrtc
def test_a_spilling_cap_steps_down_to_the_most_blocks_that_fit(monkeypatch):
    from tilelang.backend.cuda.host.nvrtc import resource_usage
    monkeypatch.setenv("TILELANG_CUDA_STREAMING_OCCUPANCY", "1")
    art = build(rms_norm(block_M=4, block_N=1024))     # spills at 8 blocks (32 registers)
    fitted = art.meta.get("streaming_occupancy_fitted")
    assert fitted is not None and set(fitted) == {art.entry} and 4 <= fitted[art.entry] < 8, fitted
    assert f"__launch_bounds__(256, {fitted[art.entry]}) " in art.source
    usage = resource_usage(art.binary)
    assert not usage or "STACK:0" in usage, usage


def test_cap_search_compiles_a_binary_search():
    """`fit_streaming_caps` on a fake compiler that spills above 8 blocks: 12 asked, 9, 7, 8
    tried (from half the cap); a kernel that spills even at half its cap loses the cap."""
    src = 'extern "C" __global__ void __launch_bounds__(96, 12) a(int* x) {}\n' \
          'extern "C" __global__ void __launch_bounds__(96, 12) b(int* x) {}\n'
    tried = []

    def spills(s):
        caps = {e: streaming_cap(s, e) for e in "ab"}
        tried.append(dict(caps))
        return {e for e, n in caps.items() if n is not None and n > (8 if e == "a" else 2)}, f"cubin{len(tried)}"
    out, compiled = fit_streaming_caps(src, {"a", "b"}, spills)
    assert streaming_cap(out, "a") == 8 and "__launch_bounds__(96) b(" in out
    assert [t["a"] for t in tried[:3]] == [9, 7, 8]
    assert compiled is None        # b's last probe was not the source returned: compile it again


def test_a_copy_only_pipelined_kernel_asks_with_its_switch():
    """T.Pipelined loops of copies only (no gemm) are streaming kernels under
    TILELANG_CUDA_PIPELINED_OCCUPANCY (mHC pre's fused rest), not under the plain switch."""
    @T.prim_func
    def staged(A: T.Tensor((256, 4096), "bfloat16"), B: T.Tensor((256, 4096), "bfloat16")):
        with T.Kernel(256, threads=64) as bx:
            for k in T.Pipelined(8, num_stages=2):
                xs = T.alloc_shared((512,), "bfloat16")   # cp.async (a converting copy stays in place)
                T.copy(A[bx, k * 512], xs)
                for i in T.Parallel(512):
                    B[bx, k * 512 + i] = xs[i] * 2.0
    assert "annotate_min_blocks_per_sm" not in _after(staged)
    text = _after(staged, env={"TILELANG_CUDA_PIPELINED_OCCUPANCY": "1"})
    assert "T.annotate_min_blocks_per_sm(" in text, text
