"""Hand-written Ampere tensor-core code: T.ptx_ldmatrix and T.ptx_mma on per-thread
register arrays, with the published index helpers (T.get_ldmatrix_offset,
T.mma_store_index_map, T.get_mma_micro_size, T.get_swizzle_layout,
T.make_mma_swizzle_layout). Compile-only SASS checks (sm_80), errors, GPU GEMM."""
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.buffer import Buffer
from tilelang.ir.errors import LoweringError, TileLangError
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.language.tensor_core_ptx_kernels import mma_gemm


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ldmatrix_mma_sass(arch):
    art = build(mma_gemm(K=64), arch)
    ops = sass_ops(art)
    assert ops["LDSM"] == 8 and ops["HMMA"] == 8, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops
    assert "tl::ldmatrix_to<4, false>" in art.source


def _mma_kernel(a, c, shape, na, nb, nc, trans=False, num=None):
    dt = {"fp16": "float16", "bf16": "bfloat16", "tf32": "float32", "int8": "int8", "fp64": "float64",
          "e4m3": "float8_e4m3fn"}[a]
    cdt = {"fp32": "float32", "fp16": "float16", "int32": "int32", "fp64": "float64"}[c]
    num = na // 2 if num is None else num   # 16-bit A: two elements per register

    @T.prim_func
    def f(A: T.Tensor((32, 32), dt), C: T.Tensor((32, nc), cdt)):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((32, 32), dt)
            A_l = T.alloc_local((na,), dt)
            B_l = T.alloc_local((nb,), dt)
            C_l = T.alloc_local((nc,), cdt)
            tx = T.get_thread_binding()
            T.copy(A, S)
            for i in T.serial(nc):
                C_l[i] = 0
            if T.dtype(dt).bits == 16:
                T.ptx_ldmatrix(trans, num, T.access_ptr(S[tx, 0], "r"), T.access_ptr(A_l[0], "w"))
            else:
                for i in T.serial(na):
                    A_l[i] = S[tx, i]
            for i in T.serial(nb):
                B_l[i] = S[i, tx]
            T.ptx_mma(cdt, shape, "row", "col", a, a, c, A_l.data, 0, B_l.data, 0, C_l.data, 0, False)
            for i in T.serial(nc):
                C[tx, i] = C_l[i]
    return f


@needs_sass
@pytest.mark.parametrize("a,c,shape,na,nb,nc,op", [
    ("fp16", "fp16", "m16n8k16", 8, 4, 4, "HMMA"), ("bf16", "fp32", "m16n8k8", 4, 2, 4, "HMMA"),
    ("tf32", "fp32", "m16n8k8", 4, 2, 4, "HMMA"), ("int8", "int32", "m16n8k32", 16, 8, 4, "IMMA"),
    ("fp64", "fp64", "m8n8k4", 1, 1, 2, "DMMA")])
def test_mma_types_compile(a, c, shape, na, nb, nc, op):
    ops = sass_ops(build(_mma_kernel(a, c, shape, na, nb, nc), "sm_80"))
    assert ops[op] >= 1, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


@needs_sass
@pytest.mark.parametrize("num,trans", [(1, False), (2, True), (4, True)])
def test_ldmatrix_forms(num, trans):
    ops = sass_ops(build(_mma_kernel("fp16", "fp32", "m16n8k16", 8, 4, 4, trans, num), "sm_80"))
    assert ops["LDSM"] == 1, ops


@needs_nvrtc
def test_fp8_mma_needs_sm89():
    with pytest.raises(LoweringError, match="sm_89"):
        build(_mma_kernel("e4m3", "fp32", "m16n8k32", 16, 8, 4), "sm_80")


def test_cpu_backend_rejects():
    @T.prim_func
    def f(C: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            A_l = T.alloc_local((8,), "float16")
            B_l = T.alloc_local((4,), "float16")
            C_l = T.alloc_local((4,), "float32")
            for i in T.serial(8):
                A_l[i] = 1
            for i in T.serial(4):
                B_l[i] = 1
                C_l[i] = 0
            T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", A_l.data, 0, B_l.data, 0,
                      C_l.data, 0, False)
            for i in T.serial(4):
                C[i] = C_l[i]
    with pytest.raises(LoweringError, match="T.ptx_mma .*needs the CUDA backend") as e:
        tilelang.compile(f, target="cpu")
    assert "test_mma_ptx_intrinsics.py" in str(e.value)


def _one_call(body):
    @T.prim_func
    def f(C: T.Tensor((32, 8), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((32, 32), "float16")
            A_l = T.alloc_local((8,), "float16")
            C_l = T.alloc_local((8,), "float32")
            body(S, A_l, C_l)
            for i in T.serial(8):
                C[T.get_thread_binding(), i] = C_l[i]
    return f


@pytest.mark.parametrize("body,msg", [
    (lambda S, A, C: T.ptx_ldmatrix(False, 3, T.access_ptr(S[0, 0], "r"), T.access_ptr(A[0], "w")), "1, 2 or 4"),
    (lambda S, A, C: T.ptx_ldmatrix(False, 4, T.access_ptr(A[0], "r"), T.access_ptr(A[0], "w")), "shared"),
    (lambda S, A, C: T.ptx_ldmatrix(False, 4, T.access_ptr(S[0, 0], "r"), T.access_ptr(S[0, 0], "w")),
     "register array"),
    (lambda S, A, C: T.ptx_ldmatrix(False, 4, T.access_ptr(S[0, 0], "r"), T.access_ptr(A[4], "w")),
     "needs 8 elements"),
    (lambda S, A, C: T.ptx_mma("float32", "m16n8k16", "col", "col", "fp16", "fp16", "fp32", A.data, 0, A.data, 0,
                               C.data, 0, False), "row"),
    (lambda S, A, C: T.ptx_mma("float32", "m16n8k32", "row", "col", "fp16", "fp16", "fp32", A.data, 0, A.data, 0,
                               C.data, 0, False), "no m16n8k32 mma for f16"),
    (lambda S, A, C: T.ptx_mma("float32", "m16n8k16", "row", "col", "bf16", "bf16", "fp16", A.data, 0, A.data, 0,
                               C.data, 0, False), "accumulates in f32"),
    (lambda S, A, C: T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", C.data, 0, A.data, 0,
                               C.data, 0, False), "holds float32"),
    (lambda S, A, C: T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", A.data, 4, A.data, 0,
                               C.data, 0, False), "needs 8 elements"),
    (lambda S, A, C: T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", A.data, 0, A.data, 0,
                               C.data, 0, True), "saturate"),
])
def test_errors(body, msg):
    with pytest.raises(TileLangError, match=msg):
        build(_one_call(body), "sm_80")


def test_index_helpers_are_the_published_maps():
    assert T.get_mma_micro_size("float16") == (16, 16, 16)
    assert T.get_mma_micro_size("int8") == (16, 16, 32)
    # lane 17's row of the A tile and the accumulator slots of lane 5
    assert T.get_ldmatrix_offset("A", 17, 0, 32, "float16", False) == (1, 8)
    assert T.get_ldmatrix_offset("B", 17, 0, 32, "float16", True) == (9, 0)
    assert [T.mma_store_index_map(5, i) for i in (0, 1, 2, 5)] == [(1, 2), (1, 3), (9, 2), (1, 11)]
    assert T.get_swizzle_layout(3, 17, 64, "float16") == (0, 3, (2 ^ 3) * 8 + 1)
    assert T.make_mma_swizzle_layout(Buffer("s", (64, 64), "float16", "shared")) is not None


# GPU (H200) ---------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("K", [16, 64])
def test_gpu_ldmatrix_mma_gemm(K):
    import torch
    k = tilelang.compile(mma_gemm(K=K), target="cuda")
    torch.manual_seed(0)
    a = torch.randn(16, K, device="cuda", dtype=torch.float16)
    b = torch.randn(16, K, device="cuda", dtype=torch.float16)
    c = torch.zeros(16, 16, device="cuda", dtype=torch.float32)
    k(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-2, atol=1e-2)
