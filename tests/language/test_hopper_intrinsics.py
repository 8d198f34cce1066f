"""Hand-written Hopper tensor-core code: T.ptx_wgmma_ss / T.ptx_wgmma_rs, the wgmma
descriptors (T.alloc_wgmma_desc, T.initialize_wgmma_descriptor,
T.increase_descriptor_offset) and T.warpgroup_arrive / commit_batch / wait /
fence_operand. Compile-only checks of the SASS (sm_90a), the errors, and GPU GEMMs
against torch (tests/language/tensor_core_ptx_kernels.py)."""
import re

import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import LoweringError, TileLangError
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.language.tensor_core_ptx_kernels import wgmma_rs_gemm, wgmma_ss_gemm


def _no_spills(ops):
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


@needs_sass
@pytest.mark.parametrize("layout,dtype,N", [("interleave", "float16", 64), ("sw128", "bfloat16", 128)])
def test_wgmma_ss_sass(layout, dtype, N):
    art = build(wgmma_ss_gemm(N=N, layout=layout, dtype=dtype), "sm_90a")
    ops = sass_ops(art)
    # one per K step of the 64-wide tile: 4, or 16 when ptxas unrolls the loop over the 4 tiles
    # (it does once the tile copies are 16-byte vectors)
    assert ops["HGMMA"] in (4, 16), ops
    assert ops["WARPGROUP"] >= 2, ops  # wgmma.fence / wait
    _no_spills(ops)
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n%dk16\.f32\.%s\.%s" %
                     (N, *(["f16"] * 2 if dtype == "float16" else ["bf16"] * 2)), art.source)


@needs_sass
def test_wgmma_rs_sass():
    art = build(wgmma_rs_gemm(), "sm_90a")
    ops = sass_ops(art)
    assert ops["HGMMA"] == 4, ops
    _no_spills(ops)


@needs_nvrtc
def test_descriptor_built_once_still_gets_barriers():
    """The wgmma reads the tiles through the descriptors: the next tile's stores wait
    for it, and it waits for them."""
    src = build(wgmma_ss_gemm(init_once=True), "sm_90a").source
    loop = src.split("for (int kt")[1]
    stores, mma = loop.index("A_s["), loop.index("wgmma.mma_async")
    assert "__syncthreads();" in loop[:stores]
    assert "__syncthreads();" in loop[stores:mma]


def _typed_kernel(a, c, N, rs=False, k_major=True):
    """A kernel issuing one wgmma of the given PTX types (compile-only: no loads)."""
    dt = {"fp16": "float16", "bf16": "bfloat16", "tf32": "float32", "e4m3": "float8_e4m3fn",
          "int8": "int8"}[a]
    cdt = {"fp32": "float32", "fp16": "float16", "int32": "int32"}[c]
    K = {"fp16": 16, "bf16": 16, "tf32": 8}.get(a, 32)

    @T.prim_func
    def f(A: T.Tensor((64, K), dt), B: T.Tensor((N, K), dt), C: T.Tensor((128, N // 2), cdt)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64 * K,), dt)
            B_s = T.alloc_shared((N * K,), dt)
            A_l = T.alloc_local((128 // T.dtype(dt).bits,), dt)
            C_l = T.alloc_local((N // 2,), cdt)
            da = T.alloc_wgmma_desc()
            db = T.alloc_descriptor("wgmma")
            tx = T.get_thread_binding()
            for i in T.Parallel(64 * K):
                A_s[i] = A[i // K, i % K]
            for i in T.Parallel(N * K):
                B_s[i] = B[i // K, i % K]
            for i in T.unroll(128 // T.dtype(dt).bits):
                A_l[i] = A[tx % 64, i]
            T.initialize_wgmma_descriptor(da, A_s.access_ptr("r"), 1, 1, 64)
            T.initialize_wgmma_descriptor(db, B_s.access_ptr("r"), 1, 1, 64)
            T.increase_descriptor_offset(db, 32)
            T.warpgroup_fence_operand(C_l)
            T.warpgroup_arrive()
            if rs:
                T.ptx_wgmma_rs(cdt, f"m64n{N}k{K}", k_major, a, a, c, A_l.data, 0, db.data, 0, C_l.data, 0,
                               False, True, True)
            else:
                T.ptx_wgmma_ss(cdt, f"m64n{N}k{K}", k_major, k_major, a, a, c, da.data, 0, db.data, 0,
                               C_l.data, 0, False, True, True)
            T.warpgroup_commit_batch()
            T.warpgroup_wait(0)
            T.warpgroup_fence_operand(C_l)
            for r in T.unroll(N // 2):
                C[tx, r] = C_l[r]
    return f


@needs_sass
@pytest.mark.parametrize("a,c,N,rs,k_major", [
    ("fp16", "fp16", 64, False, True), ("fp16", "fp32", 256, False, False), ("fp16", "fp32", 32, True, False),
    ("bf16", "fp32", 8, True, True), ("tf32", "fp32", 64, False, True), ("tf32", "fp32", 16, True, True),
    ("e4m3", "fp32", 128, False, True), ("e4m3", "fp16", 64, True, True), ("int8", "int32", 48, False, True),
    ("int8", "int32", 16, True, True)])
def test_wgmma_types_compile(a, c, N, rs, k_major):
    art = build(_typed_kernel(a, c, N, rs, k_major), "sm_90a")
    ops = sass_ops(art)
    hg = [k for k in ops if k in ("HGMMA", "IGMMA", "QGMMA")]
    assert hg and sum(ops[k] for k in hg) == 1, ops
    _no_spills(ops)


@needs_nvrtc
def test_wgmma_needs_sm90a():
    with pytest.raises(LoweringError, match="sm_90a") as e:
        build(wgmma_ss_gemm(), "sm_80")
    assert "tensor_core_ptx_kernels.py" in str(e.value)   # points at the user's line
    with pytest.raises(LoweringError, match="sm_90a"):
        build(wgmma_rs_gemm(), "sm_90")


def test_cpu_backend_rejects_with_the_users_line():
    with pytest.raises(LoweringError):   # it indexes threads: refused before the intrinsics
        tilelang.compile(wgmma_ss_gemm(), target="cpu")

    @T.prim_func
    def f(C: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            C_l = T.alloc_local((32,), "float32")
            d = T.alloc_wgmma_desc()
            T.warpgroup_arrive()
            T.ptx_wgmma_ss("float32", "m64n64k16", True, True, "fp16", "fp16", "fp32", d.data, 0, d.data, 0,
                           C_l.data, 0, 0, 1, 1)
            for r in T.serial(32):
                C[r] = C_l[r]
    with pytest.raises(LoweringError, match="T.warpgroup_arrive .*needs the CUDA backend") as e:
        tilelang.compile(f, target="cpu")
    assert "test_hopper_intrinsics.py" in str(e.value) and "T.warpgroup_arrive()" in str(e.value)


def _one_call(body, threads=128):
    @T.prim_func
    def f(C: T.Tensor((128, 32), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            S = T.alloc_shared((64 * 64,), "float16")
            C_l = T.alloc_local((32,), "float32")
            H_l = T.alloc_local((32,), "float16")
            d = T.alloc_wgmma_desc()
            body(S, C_l, H_l, d)
            for r in T.serial(32):
                C[T.get_thread_binding(), r] = C_l[r]
    return f


@pytest.mark.parametrize("body,msg", [
    (lambda S, C, H, d: T.ptx_wgmma_ss("float32", "m64n65k16", True, True, "fp16", "fp16", "fp32", d.data, 0,
                                       d.data, 0, C.data, 0, 1, 1, 1), "multiple of 8"),
    (lambda S, C, H, d: T.ptx_wgmma_ss("float32", "m64n64k32", True, True, "fp16", "fp16", "fp32", d.data, 0,
                                       d.data, 0, C.data, 0, 1, 1, 1), "m64nNk16"),
    (lambda S, C, H, d: T.ptx_wgmma_ss("float32", "m64n128k16", True, True, "fp16", "fp16", "fp32", d.data, 0,
                                       d.data, 0, C.data, 0, 1, 1, 1), "needs 64 elements"),
    (lambda S, C, H, d: T.ptx_wgmma_ss("float32", "m64n64k16", True, True, "fp16", "fp16", "fp32", d.data, 0,
                                       d.data, 0, H.data, 0, 1, 1, 1), "must hold float32"),
    (lambda S, C, H, d: T.ptx_wgmma_ss("float32", "m64n64k16", True, True, "bf16", "fp16", "fp32", d.data, 0,
                                       d.data, 0, C.data, 0, 1, 1, 1), "A is bf16 but B is f16"),
    (lambda S, C, H, d: T.ptx_wgmma_ss("float32", "m64n64k8", False, True, "tf32", "tf32", "fp32", d.data, 0,
                                       d.data, 0, C.data, 0, 1, 1, 1), "K-major"),
    (lambda S, C, H, d: T.ptx_wgmma_ss("float32", "m64n64k16", True, True, "fp16", "fp16", "fp32", C.data, 0,
                                       d.data, 0, C.data, 0, 1, 1, 1), "T.alloc_wgmma_desc"),
    (lambda S, C, H, d: T.ptx_wgmma_ss("float32", "m64n64k16", True, True, "fp16", "fp16", "fp32", d.data, 0,
                                       d.data, 0, S.data, 0, 1, 1, 1), "register array"),
    (lambda S, C, H, d: T.ptx_wgmma_rs("float32", "m64n64k16", True, "fp16", "fp16", "fp32", C.data, 0,
                                       d.data, 0, C.data, 0, 1, 1, 1), "holds float32"),
    (lambda S, C, H, d: T.initialize_wgmma_descriptor(d, C.access_ptr("r"), 1, 1, 64), "shared memory"),
    (lambda S, C, H, d: T.initialize_wgmma_descriptor(d, S.access_ptr("r"), 5, 1, 64), "layout_type_"),
    (lambda S, C, H, d: T.initialize_wgmma_descriptor(d, S.access_ptr("r"), 1, 1, 20000), "14 bits"),
    (lambda S, C, H, d: T.warpgroup_wait(9), "0..7"),
    (lambda S, C, H, d: T.alloc_descriptor("tcgen05_smem"), "not supported"),
])
def test_errors(body, msg):
    with pytest.raises(TileLangError, match=msg):
        build(_one_call(body), "sm_90a")


# GPU (H200): hand-written GEMMs against torch --------------------------------------

def _check(kernel, N, K, dtype="float16", a_regs=False):
    import torch
    tdt = getattr(torch, dtype)
    torch.manual_seed(0)
    a = torch.randn(64, K, device="cuda", dtype=tdt)
    b = torch.randn(N, K, device="cuda", dtype=tdt)
    c = torch.zeros(64, N, device="cuda", dtype=torch.float32)
    kernel(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("layout,dtype,N,init_once", [
    ("interleave", "float16", 64, False), ("sw128", "float16", 64, False), ("sw128", "bfloat16", 128, False),
    ("interleave", "float16", 128, True), ("sw128", "float16", 256, True)])
def test_gpu_wgmma_ss_gemm(layout, dtype, N, init_once):
    K = 256
    k = tilelang.compile(wgmma_ss_gemm(N=N, K=K, layout=layout, dtype=dtype, init_once=init_once), target="cuda")
    _check(k, N, K, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("N,K", [(64, 64), (128, 128)])
def test_gpu_wgmma_rs_gemm(N, K):
    k = tilelang.compile(wgmma_rs_gemm(N=N, K=K), target="cuda")
    _check(k, N, K)


def _bulk_group_kernel():
    @T.prim_func
    def main(A: T.Tensor((128, 128), "float16"), C: T.Tensor((128, 128), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 128), "float16")
            T.copy(A, S)
            T.tma_copy(S, C)
            T.tma_store_arrive()
            T.tma_store_wait(read=True)
            T.tma_store_wait(1)
    return main


@needs_sass
def test_bulk_store_groups_commit_and_wait():
    art = build(_bulk_group_kernel())
    assert "tl::tma_store_arrive();" in art.source
    assert "tl::tma_store_wait<0, true>();" in art.source and "tl::tma_store_wait<1, false>();" in art.source
    ops = sass_ops(art)
    # the store itself is one bulk copy that completes before the next statement (thread 0
    # commits and waits: backend/cuda/ops/tma_store.py); the explicit calls add their group and waits
    # (the copy into S may be issued as cp.async + one wait: plan/copy_forms.py, one more DEPBAR)
    cp_async_waits = art.source.count("tl::cp_async_wait<")
    assert ops["UBLKCP"] == 1 and ops["UTMACMDFLUSH"] == 2 and ops["DEPBAR"] == 3 + cp_async_waits, ops


def test_bulk_store_groups_are_no_ops_on_the_cpu():
    import torch
    k = tilelang.compile(_bulk_group_kernel(), out_idx=[1], target="cpu")
    a = torch.randn(128, 128).half()
    assert torch.equal(k(a), a)


def test_tma_store_wait_count_is_checked():
    with pytest.raises(ValueError, match="n must be an int >= 0"):
        T.tma_store_wait(-1)
