"""A one-element fragment is one value replicated over the block's threads: indexing it
inside a T.Parallel loop reads (and writes) that value on the CPU, as on the GPU (the
published attention-sink kernels fill `sinks = T.alloc_fragment([heads])` over block_M)."""
import numpy as np

import tilelang
import tilelang.language as T


def test_one_element_fragment_broadcasts():
    @T.prim_func
    def k(S: T.Tensor((1,), "float32"), O: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_fragment([1], "float32")
            acc = T.alloc_fragment([64], "float32")
            for i in T.Parallel(64):
                s[i] = S[0]
            for i in T.Parallel(64):
                acc[i] = s[i] * 2 + i
            T.copy(acc, O)
    o = np.zeros(64, np.float32)
    tilelang.compile(k, target="cpu")(np.array([1.5], np.float32), o)
    np.testing.assert_allclose(o, 3.0 + np.arange(64))


def test_fragment_filled_past_its_length_by_a_loop():
    """`sinks = T.alloc_fragment([heads])` filled and read as `sinks[i]` for i < block_M
    (the published GQA attention-sink kernels, heads < block_M): on the GPU the registers
    follow the loop, so every row sees the value; the CPU allocates block_M elements."""
    heads, block_M = 4, 64

    @T.prim_func
    def k(S: T.Tensor((heads,), "float32"), O: T.Tensor((heads, block_M), "float32")):
        with T.Kernel(heads, threads=128) as by:
            sinks = T.alloc_fragment([heads], "float32")
            acc = T.alloc_fragment([block_M], "float32")
            for i in T.Parallel(block_M):
                sinks[i] = S[by]
            for i in T.Parallel(block_M):
                acc[i] = sinks[i] + i
            T.copy(acc, O[by, :])
    s = np.arange(1, heads + 1, dtype=np.float32) * 10
    o = np.zeros((heads, block_M), np.float32)
    kern = tilelang.compile(k, target="cpu")
    kern(s, o)
    np.testing.assert_allclose(o, s[:, None] + np.arange(block_M)[None, :])
    assert f"* (size_t)({block_M}))" in kern.get_kernel_source()   # sinks: block_M elements


def test_other_out_of_range_fragment_stores_stay_guarded():
    @T.prim_func
    def k(O: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment([8], "float32")
            for i in T.Parallel(8):
                f[i] = 1.0
            for i in T.Parallel(8):
                f[i * 3] = 2.0     # past the end for i >= 3: skipped on the CPU, not grown
            T.copy(f, O)
    o = np.zeros(8, np.float32)
    kern = tilelang.compile(k, target="cpu")
    kern(o)
    np.testing.assert_allclose(o, [2, 1, 1, 2, 1, 1, 2, 1])
