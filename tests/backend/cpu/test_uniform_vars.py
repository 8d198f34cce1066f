"""uniform_vars.py: which T.alloc_var scalars are the block's (same in every thread)."""
import tilelang.language as T
from tilelang.backend.cpu.thread_phases import thread_private_buffers
from tilelang.backend.cpu.uniform_vars import uniform_vars
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk


def _kernel_launch(f):
    out = []
    walk(f.body, lambda n: out.append(n) if isinstance(n, S.KernelLaunch) else None)
    return out[0]


def _uniform_names(f):
    k = _kernel_launch(f)
    private = thread_private_buffers(k)
    ids = uniform_vars(k.body, {id(v) for v in k.thread_vars}, {id(b) for b in private},
                       {id(b): b for b in private})
    return sorted(b.name for b in private if id(b) in ids)


def test_counter_set_alike_is_uniform_thread_values_are_not():
    @T.prim_func
    def k(A: T.Tensor((32,), "int32"), C: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            cnt = T.alloc_var("int32")
            mine = T.alloc_var("int32")
            derived = T.alloc_var("int32")
            branchy = T.alloc_var("int32")
            prev = T.alloc_var("int32")
            cnt = 0
            mine = tx * 2
            derived = cnt + mine      # reads a per-thread value
            branchy = 0
            if tx == 0:               # stored under a thread-dependent branch
                branchy = 1
            prev = T.atomic_add(C[0], 1, return_prev=True)   # each thread gets another value
            while cnt < 4:
                cnt = cnt + 1
            A[tx] = cnt + mine + derived + branchy + prev
    assert _uniform_names(k) == ["cnt"]
