"""`T.fill(buf[i], v)` fills that one element (a region of extent 1 at i)."""
import numpy as np

import tilelang
import tilelang.language as T


def test_fill_one_element_of_shared_and_fragment():
    @T.prim_func
    def k(O: T.Tensor((2, 8), "int32")):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((8,), "int32")
            f = T.alloc_fragment((8,), "int32")
            T.fill(s, 1)
            T.fill(s[3], 7)
            T.fill(f, 2)
            T.fill(f[bx + 5], 9)
            T.copy(s, O[0, :])
            T.copy(f, O[1, :])
    kern = tilelang.compile(k, target="cpu")
    o = np.zeros((2, 8), np.int32)
    kern(o)
    np.testing.assert_array_equal(o[0], [1, 1, 1, 7, 1, 1, 1, 1])
    np.testing.assert_array_equal(o[1], [2, 2, 2, 2, 2, 9, 2, 2])


def test_fill_element_of_a_2d_buffer():
    @T.prim_func
    def k(O: T.Tensor((4, 4), "float32")):
        with T.Kernel(1) as bx:
            s = T.alloc_shared((4, 4), "float32")
            T.clear(s)
            T.fill(s[2, 1], 1.5)
            T.copy(s, O)
    kern = tilelang.compile(k, target="cpu")
    o = np.ones((4, 4), np.float32)
    kern(o)
    want = np.zeros((4, 4), np.float32)
    want[2, 1] = 1.5
    np.testing.assert_array_equal(o, want)
