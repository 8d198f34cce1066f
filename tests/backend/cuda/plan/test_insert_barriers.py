"""plan/sync.py as the pass `insert_barriers`: every block barrier the kernel needs is a
node of the IR (`T.sync_threads()  # inserted: <buffers>`), visible in the printed IR and
the lower trace; the code generator prints them."""
import re

import tilelang.language as T
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.plan_kernels import kernel_plan
from tilelang.backend.cuda.plan.sync import insert_barriers, is_inserted_barrier
from tilelang.ir import stmt as S
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda.plan.test_copy_forms import tile_copy


def _before_after(func, arch="sm_80"):
    """The function just before insert_barriers (printed) and after it."""
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    k = P.PASSES.index(insert_barriers)
    before = run_passes(func, P.PASSES[:k], ctx)
    text = func_str(before)
    return text, insert_barriers(before, ctx), ctx


def _lines(text):
    """The statements of the printed IR (no plan comments), stripped, in order."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def _kinds(lines):
    """A FileCheck-like outline: `copy X -> Y` for each copy nest, `sync: <why>` for each barrier."""
    out = []
    for ln in lines:
        m = re.match(r"T\.sync_threads\(\)  # inserted: (.*)", ln)
        if m:
            out.append(f"sync: {m.group(1)}")
        elif ln.startswith("for ") and "T.Parallel" in ln:
            out.append("nest")
        elif ln.startswith("for ") or ln.startswith("T.gemm"):
            out.append(ln.split(" in ")[0] if ln.startswith("for ") else "gemm")
    return out


def test_a_barrier_between_the_write_and_the_read_of_a_shared_tile():
    before, after, _ = _before_after(tile_copy())
    assert "T.sync_threads" not in before
    assert _kinds(_lines(func_str(after))) == ["nest", "sync: S", "nest"]


def test_loop_carried_barriers():
    @T.prim_func
    def k(G: T.Tensor((256, 64), "float32"), H: T.Tensor((256, 64), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float32")
            for i in T.serial(4):
                T.copy(G[i * 64, 0], S)
                for r, c in T.Parallel(64, 64):
                    H[i * 64 + r, c] = S[c, r]
    _, after, _ = _before_after(k)
    # the read of S after its write; the next iteration's write after this one's read
    assert _kinds(_lines(func_str(after))) == ["for i", "sync: S", "nest", "sync: S", "nest"]


def test_the_pass_is_idempotent():
    _, after, ctx = _before_after(tile_copy())
    text = func_str(after)
    assert func_str(insert_barriers(after, ctx)) == text


def test_a_pipelined_body_lists_its_barriers_in_the_plan():
    """A pipelined loop whose body writes a shared tile that its gemm reads: the barrier
    node is in the loop body and in the plan's statements of that body (the schedules
    that print the body themselves print it from there)."""
    @T.prim_func
    def k(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16"), C: T.Tensor((256, 256), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            As = T.alloc_shared((128, 32), "float16")
            Ps = T.alloc_shared((128, 32), "float16")
            Bs = T.alloc_shared((32, 128), "float16")
            Cl = T.alloc_fragment((128, 128), "float32")
            T.clear(Cl)
            for kk in T.Pipelined(8, num_stages=2):
                T.copy(A[by * 128, kk * 32], As)
                T.copy(B[kk * 32, bx * 128], Bs)
                for i, j in T.Parallel(128, 32):
                    Ps[i, j] = As[i, j] * T.float16(2)
                T.gemm(Ps, Bs, Cl)
            T.copy(Cl, C[by * 128, bx * 128])
    _, after, _ = _before_after(k)
    outline = _kinds(_lines(func_str(after)))
    loop = outline.index("for kk")
    assert outline[loop:] == ["for kk", "nest", "nest", "nest", "sync: Ps", "gemm", "nest"]
    launch = after.body if isinstance(after.body, S.KernelLaunch) else after.body.stmts[0]
    (info,) = kernel_plan(launch).pipelines.values()
    assert [type(s).__name__ for s in info.rest] == ["For", "Barrier", "Gemm"]
    assert is_inserted_barrier(info.rest[1])


def test_the_barrier_is_printed_as_syncthreads():
    import tilelang
    src = tilelang.lower(tile_copy(), target={"kind": "cuda", "arch": "sm_80"}).kernel_source
    assert src.count("__syncthreads();") == 1


def test_no_barrier_between_the_lanes_of_a_vectorized_loop():
    """A T.vectorized loop is one vector access per thread: its lanes (here the four
    atomics of a per-thread AtomicAddx4Ret) are never ordered by a block barrier."""
    @T.prim_func
    def k(Dst: T.Tensor((4,), "float32"), Prev: T.Tensor((64, 4), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            if tx < 64:
                Prev[tx, 0:4] = T.atomic_addx4(Dst[0:4], 1.0, return_prev=True)
    _, after, _ = _before_after(k, "sm_90a")
    lines = _lines(func_str(after))
    at = next(i for i, ln in enumerate(lines) if ln.startswith("for lane in T.vectorized"))
    assert not lines[at + 1].startswith("T.sync_threads()"), lines
    assert not any(ln.startswith("T.sync_threads()") for ln in lines), lines


def _row_chunks(chunks):
    """A row kernel writing its row in `chunks` chunks of a register tile (the examples'
    rms_norm pass 2): iteration k writes Y[.., k * 256 + j]."""
    @T.prim_func
    def k(X: T.Tensor((8, 256 * chunks), "float16"), Y: T.Tensor((8, 256 * chunks), "float16")):
        with T.Kernel(8, threads=128) as bx:
            x = T.alloc_fragment((1, 256), "float32")
            for c in T.serial(chunks):
                T.copy(X[bx, c * 256], x)
                for i, j in T.Parallel(1, 256):
                    x[i, j] = x[i, j] * 2.0
                T.copy(x, Y[bx, c * 256])
    return k


def test_a_loop_of_one_iteration_carries_nothing():
    # one chunk: no barrier before the store (there is no next iteration to order it against);
    # two chunks: the next iteration's store is ordered after this one's, as before
    _, once, _ = _before_after(_row_chunks(1), arch="sm_90a")
    _, twice, _ = _before_after(_row_chunks(2), arch="sm_90a")
    assert not [k for k in _kinds(_lines(func_str(once))) if k.startswith("sync")]
    assert [k for k in _kinds(_lines(func_str(twice))) if k.startswith("sync")] == ["sync: Y"]
