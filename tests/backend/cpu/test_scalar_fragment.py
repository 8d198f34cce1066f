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
