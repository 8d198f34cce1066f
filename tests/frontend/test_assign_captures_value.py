"""`v = S[i]` in kernel code takes the value where it is written (as the published
package's let bindings do), not at each later use: reading it again after a barrier or a
store to `S` would give another value (a wrong result found by the issue-14 probes)."""
import numpy as np

import tilelang
import tilelang.language as T
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk


def rotate(steps, loop):
    @T.prim_func
    def k(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            sh = T.alloc_shared((32,), "float32")
            sh[tx] = A[tx]
            T.sync_threads()
            if loop == "serial":
                for it in T.serial(steps):
                    v = sh[(tx + 1) % 32]
                    T.sync_threads()
                    sh[tx] = v + 1.0
                    T.sync_threads()
            else:   # a while loop on a counter every thread keeps alike
                cnt = T.alloc_var("int32")
                cnt = 0
                while cnt < steps:
                    v = sh[(tx + 1) % 32]
                    T.sync_threads()
                    sh[tx] = v + 1.0
                    T.sync_threads()
                    cnt = cnt + 1
            B[tx] = sh[tx]
    return k


def _decls(f):
    out = []
    walk(f.body, lambda n: out.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    return out


def test_value_is_held_in_a_kernel_variable():
    f = rotate(3, "serial")
    assert [b.name for b in _decls(f) if b.scope == "local.var"] == ["v"]


def test_inside_parallel_the_name_stays_an_alias():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                v = A[i]
                B[i] = v * v
    assert not [b for b in _decls(k) if b.scope == "local.var"]


def test_rotation_through_shared_memory_on_cpu():
    a = np.arange(32, dtype="float32")
    for loop in ("serial", "while"):
        b = np.zeros(32, "float32")
        tilelang.compile(rotate(3, loop), target="cpu")(a, b)
        np.testing.assert_array_equal(b, np.roll(a, -3) + 3)


def test_value_read_before_a_store_to_the_same_place():
    @T.prim_func
    def k(A: T.Tensor((4,), "int32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            old = A[0]
            A[0] = 7
            B[0] = old
    a = np.array([3, 0, 0, 0], "int32")
    b = np.zeros(4, "int32")
    tilelang.compile(k, target="cpu")(a, b)
    assert b[0] == 3 and a[0] == 7
