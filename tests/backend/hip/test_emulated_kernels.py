"""The HIP backend's generated kernels run on the CPU emulator (tests/backend/hip/emulator:
one host thread per GPU thread, wavefront shuffles and MFMA by their ISA definitions)
against each program's reference: the thread mapping, barriers, MFMA lane layouts and
shuffle reductions compute the right values, which compiling alone cannot show. Every
program is built into one library (one clang++ run)."""
import math

import numpy as np
import pytest

from tests.examples.test_examples_cuda import _example
from tests.backend.hip.helpers import hip_source
from tests.backend.hip import emulator
from tests.backend.cuda import kernels as CK
from tests.backend.hip import kernels as HK

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(emulator.clang() is None, reason="clang++ (C++20) not installed")


def fp8_gemm(*args):
    from tests.backend.hip.test_compile import fp8_gemm as make
    return make(*args)


def _tir(folder, factory, *args, **kwargs):
    fn = getattr(_example(folder, "mla_decode" if folder == "deepseek_mla" else None), factory)
    return fn.get_tir(*args, **kwargs) if hasattr(fn, "get_tir") else fn(*args, **kwargs)


PROGRAMS = {
    "gemm_f16": lambda: _tir("gemm", "matmul", 128, 128, 64, 64, 64, 32),
    "gemm_bf16_nt": lambda: _tir("gemm", "matmul", 128, 128, 64, 64, 64, 32, trans_B=True, relu=True,
                                 dtype="bfloat16"),
    "fa_causal": lambda: _tir("flash_attention", "flash_attention", 1, 1, 128, 128, 64, is_causal=True),
    # register fragments: P, its cast (the register A operand of P @ V) and the row statistics
    "fa_d64_regs": lambda: _tir("flash_attention", "flash_attention", 1, 1, 128, 192, 64, block_M=64, block_N=64,
                                threads=256),
    # head dim 128: the output tile reuses Q's LDS bytes (lds_reuse.py); 128x64 also unpadded (64 KiB)
    "fa_d128_regs": lambda: _tir("flash_attention", "flash_attention", 1, 1, 128, 128, 128, block_M=128,
                                 block_N=64, threads=256),
    "fa_d128_causal": lambda: _tir("flash_attention", "flash_attention", 1, 1, 128, 128, 128, is_causal=True,
                                   block_M=64, block_N=64, threads=256),
    "softmax": lambda: _tir("softmax", "softmax", 32, 160),
    "rms_norm": lambda: _tir("rms_norm", "rms_norm", 32, 128),
    # split-KV decode: two kernels, workspaces, a ragged last split (seqlen 100 = 3 x 32 + 4)
    "mla": lambda: _tir("deepseek_mla", "mla_decode", 1, 16, 100, 64, 16, block_H=16, block_N=16, num_split=3,
                        threads=64),
    # the AMD form of MLA decode: 64-head blocks, Q and P in registers (tests/backend/hip/kernels.py)
    "mla_regs": lambda: HK.mla_decode_registers(1, 64, 100, 64, 16, block_H=64, block_N=32, num_split=2),
    "fp8_gemm": lambda: fp8_gemm(64, 64, 64, 64, 64, 64),
    "splitk": lambda: _tir("gemm_splitk", "matmul_splitk", 64, 64, 128, split_k=2),
    "acc_reductions": lambda: acc_reductions(),
    # against the CPU backend (test_same_as_cpu_backend)
    "gemm_tA_tB": lambda: CK.gemm(128, 64, 64, 64, 64, 32, trans_A=True, trans_B=True),
    "copy_2d": lambda: CK.copy_2d(),
    "scalar_dyn": lambda: CK.scalar_and_dynamic(),
    "rowstats_dim0": lambda: CK.gemm_row_stats(M=128, reduce_dim=0),
    "row_sum_atomic": lambda: CK.row_sum_atomic(),
}
CPU_CHECKED = ["fa_d64_regs", "mla_regs", "softmax", "gemm_tA_tB", "copy_2d", "scalar_dyn", "rowstats_dim0",
               "row_sum_atomic"]


def acc_reductions():
    """Row reductions of an accumulator on 2x2 waves (registers + LDS across waves) and a
    column reduction (staged through LDS), max / sum / absmax, one with clear=False."""
    import tilelang.language as T

    @T.prim_func
    def acc_red(A: T.Tensor((64, 32), "float16"), B: T.Tensor((64, 32), "float16"),
                Y: T.Tensor((4, 64), "float32")):
        with T.Kernel(1, threads=256) as bx:
            As = T.alloc_shared((64, 32), "float16")
            Bs = T.alloc_shared((64, 32), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            m = T.alloc_fragment((64,), "float32")
            s = T.alloc_fragment((64,), "float32")
            c = T.alloc_fragment((64,), "float32")
            a = T.alloc_fragment((64,), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, acc, transpose_B=True, clear_accum=True)
            T.reduce_max(acc, m, dim=1)
            T.fill(s, 1.0)
            T.reduce_sum(acc, s, dim=1, clear=False)
            T.reduce_sum(acc, c, dim=0)
            T.reduce_absmax(acc, a, dim=1)
            for i in T.Parallel(64):
                Y[0, i] = m[i]
                Y[1, i] = s[i]
                Y[2, i] = c[i]
                Y[3, i] = a[i]
    return acc_red


@pytest.fixture(scope="module")
def lib():
    progs, metas = [], {}
    for tag, make in PROGRAMS.items():
        _, src, meta = hip_source(make(), "gfx940" if tag.startswith("fp8") else "gfx90a")
        src, meta = emulator.rename(src, meta, tag)
        progs.append((src, meta))
        metas[tag] = meta
    return emulator.build(progs), metas


def _t(a):
    return torch.from_numpy(np.asarray(a, dtype=np.float32))


def test_gemm_f16(lib):
    L, metas = lib
    rng = np.random.default_rng(0)
    A = rng.standard_normal((128, 64)).astype(np.float16)
    B = rng.standard_normal((64, 128)).astype(np.float16)
    C = np.zeros((128, 128), np.float16)
    emulator.run(L, metas["gemm_f16"], [A, B, C])
    ref = (A.astype(np.float32) @ B.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(C.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_gemm_bf16_transposed_b_relu(lib):
    import ml_dtypes
    L, metas = lib
    rng = np.random.default_rng(1)
    A = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)   # N x K
    C = np.zeros((128, 128), ml_dtypes.bfloat16)
    emulator.run(L, metas["gemm_bf16_nt"], [A, B, C])
    ref = np.maximum(A.astype(np.float32) @ B.astype(np.float32).T, 0).astype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(C.astype(np.float32), ref.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_flash_attention_causal(lib):
    L, metas = lib
    rng = np.random.default_rng(2)
    Q, K, V = (rng.standard_normal((1, 1, 128, 64)).astype(np.float16) for _ in range(3))
    O = np.zeros_like(Q)
    emulator.run(L, metas["fa_causal"], [Q, K, V, O])
    s = Q.astype(np.float32) @ K.astype(np.float32).transpose(0, 1, 3, 2) / math.sqrt(64)
    s = np.where(np.tril(np.ones((128, 128), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ V.astype(np.float32)
    np.testing.assert_allclose(O.astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def _attention(Q, K, V, causal=False):
    q, k, v = (x.astype(np.float32) for x in (Q, K, V))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool), s.shape[-1] - s.shape[-2]), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("tag,seq_q,seq_kv,heads,dim,causal", [
    ("fa_d128_regs", 128, 128, 1, 128, False), ("fa_d128_causal", 128, 128, 1, 128, True)])
def test_flash_attention_register_fragments(lib, tag, seq_q, seq_kv, heads, dim, causal):
    """Head dim 128 on 4 waves (FullRow: 16- or 32-row strips): S, P and the softmax
    statistics in registers, P fed to the second MFMA from registers, row reductions by
    shuffles across lane groups, O_shared in Q_shared's LDS bytes. (Head dim 64 and MLA
    decode are checked against the CPU backend below.)"""
    L, metas = lib
    rng = np.random.default_rng(12)
    Q = rng.standard_normal((1, heads, seq_q, dim)).astype(np.float16)
    K, V = (rng.standard_normal((1, heads, seq_kv, dim)).astype(np.float16) for _ in range(2))
    O = np.zeros_like(Q)
    emulator.run(L, metas[tag], [Q, K, V, O])
    np.testing.assert_allclose(O.astype(np.float32), _attention(Q, K, V, causal), rtol=1e-2, atol=1e-2)


def test_softmax(lib):
    L, metas = lib
    X = np.random.default_rng(3).standard_normal((32, 160)).astype(np.float32)
    Y = np.zeros_like(X)
    emulator.run(L, metas["softmax"], [X, Y])
    e = np.exp(X - X.max(1, keepdims=True))
    np.testing.assert_allclose(Y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_rms_norm(lib):
    L, metas = lib
    rng = np.random.default_rng(4)
    X = rng.standard_normal((32, 128)).astype(np.float32)
    W = rng.standard_normal(128).astype(np.float32)
    Y = np.zeros_like(X)
    emulator.run(L, metas["rms_norm"], [X, W, Y])
    ref = X / np.sqrt((X * X).mean(1, keepdims=True) + 1e-6) * W
    np.testing.assert_allclose(Y, ref, rtol=1e-5, atol=1e-5)


def test_mla_decode_split_kv(lib):
    L, metas = lib
    rng = np.random.default_rng(5)
    Q, Qpe = rng.standard_normal((1, 16, 64)), rng.standard_normal((1, 16, 16))
    KV, Kpe = rng.standard_normal((1, 100, 64)), rng.standard_normal((1, 100, 16))
    Q, Qpe, KV, Kpe = (x.astype(np.float16) for x in (Q, Qpe, KV, Kpe))
    O = np.zeros((1, 16, 64), np.float16)
    emulator.run(L, metas["mla"], [Q, Qpe, KV, Kpe, O])
    ref = _example("deepseek_mla", "mla_decode").ref_program(*(torch.from_numpy(x) for x in (Q, Qpe, KV, Kpe)))
    np.testing.assert_allclose(O.astype(np.float32), ref.float().numpy(), rtol=2e-2, atol=2e-2)


def test_fp8_gemm_gfx940(lib):
    """float8_e4m3fnuz operands (bias 8), values exactly representable: the MFMA sum is exact."""
    import ml_dtypes
    L, metas = lib
    rng = np.random.default_rng(6)
    A = (rng.integers(-8, 8, (64, 64)) / 4).astype(ml_dtypes.float8_e4m3fnuz)
    B = (rng.integers(-8, 8, (64, 64)) / 4).astype(ml_dtypes.float8_e4m3fnuz)   # N x K
    C = np.zeros((64, 64), np.float32)
    emulator.run(L, metas["fp8_gemm"], [A.view(np.uint8), B.view(np.uint8), C])
    np.testing.assert_array_equal(C, A.astype(np.float32) @ B.astype(np.float32).T)


def test_split_k_gemm_atomic_add(lib):
    L, metas = lib
    rng = np.random.default_rng(7)
    A = rng.standard_normal((64, 128)).astype(np.float16)
    B = rng.standard_normal((128, 64)).astype(np.float16)
    C = np.zeros((64, 64), np.float32)
    emulator.run(L, metas["splitk"], [A, B, C])
    np.testing.assert_allclose(C, A.astype(np.float32) @ B.astype(np.float32), rtol=1e-4, atol=1e-4)


def test_accumulator_reductions(lib):
    L, metas = lib
    rng = np.random.default_rng(8)
    A = rng.standard_normal((64, 32)).astype(np.float16)
    B = rng.standard_normal((64, 32)).astype(np.float16)
    Y = np.zeros((4, 64), np.float32)
    emulator.run(L, metas["acc_reductions"], [A, B, Y])
    P = A.astype(np.float32) @ B.astype(np.float32).T
    ref = np.stack([P.max(1), 1 + P.sum(1), P.sum(0), np.abs(P).max(1)])
    np.testing.assert_allclose(Y, ref, rtol=1e-4, atol=1e-4)


def _inputs(func, rng, n_dynamic=300):
    """Random arrays for the tensor parameters (dynamic dimensions = n_dynamic), ints 3,
    floats 0.5."""
    from tilelang.ir.buffer import Buffer
    arrays, ints, floats = [], [], []
    for p in func.params:
        if isinstance(p, Buffer):
            shape = [d if isinstance(d, int) else getattr(d, "value", n_dynamic) for d in p.shape]
            arrays.append(rng.standard_normal(shape).astype(str(p.dtype)))
        elif p.dtype.is_float:
            floats.append(0.5)
        else:
            ints.append(3)
    dyn = [n_dynamic for _ in func.dynamic_vars()]
    return arrays, ints, floats, dyn


@pytest.mark.parametrize("tag", CPU_CHECKED)
def test_same_as_cpu_backend(lib, tag):
    """The HIP program run by the emulator gives the CPU backend's results (the reference
    semantics) on the same random inputs."""
    import tilelang
    L, metas = lib
    func = PROGRAMS[tag]()
    arrays, ints, floats, dyn = _inputs(func, np.random.default_rng(9))
    mine = [a.copy() for a in arrays]
    emulator.run(L, metas[tag], mine, ints + dyn, floats)
    ref = [torch.from_numpy(a.copy()) for a in arrays]
    kernel = tilelang.compile(func, target="cpu")
    from tilelang.ir.buffer import Buffer
    args, it = [], iter(ref)
    for p in func.params:
        args.append(next(it) if isinstance(p, Buffer) else (0.5 if p.dtype.is_float else 3))
    kernel(*args)
    for got, want in zip(mine, ref):
        np.testing.assert_allclose(got.astype(np.float32), want.numpy().astype(np.float32), rtol=2e-3, atol=2e-3)
