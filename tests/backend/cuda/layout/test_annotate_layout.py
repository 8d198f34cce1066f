"""T.annotate_layout on shared buffers: the 128-byte swizzle of 16-bit tiles (exactly
tl::sw128, what hand-written wgmma descriptors and TMA expect) and unswizzled layouts
are kept; other layouts are read through their index (tests/backend/cuda/plan/
test_annotated_layouts.py). The annotation is part of the hashed kernel text."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build, sass_ops
from tilelang.layout.swizzle import (make_full_bank_swizzled_layout, make_half_bank_swizzled_layout,
                                     make_linear_layout)


def round_trip(make=None, gemm=False):
    @T.prim_func
    def f(A: T.Tensor((64, 128), "float16"), B: T.Tensor((128, 64), "float16"), C: T.Tensor((64, 64), "float32"),
          D: T.Tensor((64, 128), "float16")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 128), "float16")
            b = T.alloc_shared((128, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            if make is not None:
                T.annotate_layout({s: make(s)})
            T.copy(A, s)
            T.copy(B, b)
            if gemm:
                T.gemm(s, b, c, clear_accum=True)
                T.copy(c, C)
            T.copy(s, D)
    return f


@needs_nvrtc
def test_full_bank_swizzle_is_sw128():
    src = build(round_trip(make_full_bank_swizzled_layout)).source
    assert "s[tl::sw128<64>(" in src
    # without the annotation the copy-only buffer stays row-major
    assert "s[tl::sw128<64>(" not in build(round_trip()).source


def _strides_of_s(func, arch):
    from tilelang.backend.cuda.plan.kernel import plan_kernel
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    launches, decls = [], []
    walk(func.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    walk(func.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) and n.buffer.name == "s" else None)
    return plan_kernel(launches[0], arch).placements[id(decls[0])].strides


@needs_nvrtc
def test_linear_layout_is_unpadded_for_mma():
    # an mma.sync operand's rows are padded by 16 bytes against ldmatrix bank conflicts,
    # unless its layout was annotated
    assert _strides_of_s(round_trip(gemm=True), "sm_80") == [136, 1]
    linear = round_trip(lambda s: make_linear_layout([64, 128]), gemm=True)
    assert _strides_of_s(linear, "sm_80") == [128, 1]
    assert sass_ops(build(linear, arch="sm_80"))["HMMA"] > 0


@needs_nvrtc
def test_annotated_wgmma_operand_still_uses_wgmma():
    ops = sass_ops(build(round_trip(make_full_bank_swizzled_layout, gemm=True)))
    assert ops["HGMMA"] > 0


@needs_nvrtc
def test_other_swizzles_are_read_through_their_index():
    src = build(round_trip(make_half_bank_swizzled_layout)).source
    assert "s[tl::sw128" not in src and " ^ " in src


@needs_nvrtc
def test_mma_operand_keeps_tensor_cores():
    """On sm_80 an annotated 128-byte swizzle gives way to the mma.sync operand layout
    (ldmatrix rows) instead of sending the gemm to the SIMT loop; the plan report says so
    (plan/kernel.py `_kept_annotations`)."""
    art = build(round_trip(make_full_bank_swizzled_layout, gemm=True), arch="sm_80")
    assert sass_ops(art)["HMMA"] > 0


@needs_nvrtc
def test_annotation_is_part_of_the_cache_key():
    a = tilelang.compile(round_trip(make_full_bank_swizzled_layout), target="cuda -arch=sm_90a")
    b = tilelang.compile(round_trip(), target="cuda -arch=sm_90a")
    assert "sw128<64>(" in a.get_kernel_source() and "s[tl::sw128" not in b.get_kernel_source()


def test_cpu_ignores_layouts():
    import numpy as np
    a = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float16)
    d = np.zeros((64, 128), np.float16)
    tilelang.compile(round_trip(make_full_bank_swizzled_layout), target="cpu")(
        a, np.zeros((128, 64), np.float16), np.zeros((64, 64), np.float32), d)
    assert (d == a).all()


@pytest.mark.gpu
@pytest.mark.parametrize("make", [make_full_bank_swizzled_layout, None])
def test_annotated_round_trip_and_gemm_gpu(make):
    import torch
    k = tilelang.compile(round_trip(make, gemm=True), target="cuda")
    a = torch.randn(64, 128, device="cuda", dtype=torch.float16)
    b = torch.randn(128, 64, device="cuda", dtype=torch.float16)
    c = torch.empty(64, 64, device="cuda", dtype=torch.float32)
    d = torch.empty(64, 128, device="cuda", dtype=torch.float16)
    k(a, b, c, d)
    assert torch.equal(d, a)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-2, atol=1e-2)
