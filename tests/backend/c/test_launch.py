"""backend/c/launch.py: the (buffers, ints, floats) launch ABI both backends build
their host glue from."""
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E
from tilelang.backend.c.launch import LaunchABI, c_entry_unpack, py_expr


def _func():
    n = T.dynamic("n")

    @T.prim_func
    def f(A: T.Tensor((n, 8), "float32"), scale: T.float32, k: T.int32, B: T.Tensor((n, 8), "float16"),
          eps: T.float64):
        with T.Kernel(T.ceildiv(n, 4), threads=32) as bx:
            for i, j in T.Parallel(4, 8):
                if bx * 4 + i < n:
                    B[bx * 4 + i, j] = A[bx * 4 + i, j] * scale + k + eps
    return f


def test_parameters_split_into_buffers_ints_then_dynamic_and_floats():
    f = _func()
    abi = LaunchABI.of(f)
    assert [b.name for b in abi.buffers] == ["A", "B"]
    assert [v.name for v in abi.ints] == ["k", "n"] and abi.n_dynamic == 1
    assert [v.name for v in abi.floats] == ["scale", "eps"]
    assert [c for c, _ in abi.slots()] == ["buffer", "buffer", "int", "int", "float", "float"]
    assert abi.counts() == {"n_buffers": 2, "n_ints": 2, "n_floats": 2}
    assert abi.index(abi.floats[1]) == 1 and abi.index(abi.ints[1]) == 1
    with pytest.raises(KeyError, match="`x` is not a parameter"):
        abi.index(E.Var("x"))


def test_c_entry_reads_each_parameter_from_its_array_in_declaration_order():
    f = _func()
    abi = LaunchABI.of(f)
    ct = {"float32": "float", "float16": "half", "int32": "int32_t", "float64": "double"}
    lines = c_entry_unpack(abi, f.params, lambda dt: ct[dt.name], lambda o: o.name, lambda b: " __restrict__")
    assert lines == ["float* __restrict__ A = (float*)tl_bufs[0];",
                     "half* __restrict__ B = (half*)tl_bufs[1];",
                     "const float scale = (float)tl_floats[0];",
                     "const int32_t k = (int32_t)tl_ints[0];",
                     "const double eps = (double)tl_floats[1];",
                     "const int32_t n = (int32_t)tl_ints[1];"]


def test_py_expr_evaluates_launch_sizes_over_ints():
    f = _func()
    abi = LaunchABI.of(f)
    n = abi.ints[1]
    grid = E.binop("//", E.binop("+", n, 3), 4)
    src = py_expr(grid, abi.int_env())
    assert eval(src, {"ints": [0, 10]}) == 3
    sel = py_expr(E.Select(E.BinOp("<", n, E.IntImm(4)), E.IntImm(1), n), abi.int_env())
    assert eval(sel, {"ints": [0, 2]}) == 1 and eval(sel, {"ints": [0, 9]}) == 9
    with pytest.raises(NotImplementedError, match="depends on `m`, which is not a parameter"):
        py_expr(E.Var("m"), abi.int_env())


def test_both_backends_follow_the_abi():
    f = _func()
    src = tilelang.compile(f, target="cpu").get_kernel_source()
    for line in ["float* __restrict__ A = (float*)tl_bufs[0];", "const int32_t n = (int32_t)tl_ints[1];",
                 "const double eps = (double)tl_floats[1];"]:
        assert line in src
    from tilelang.backend.cuda.host.nvrtc import nvrtc_available
    if not nvrtc_available():
        return
    k = tilelang.compile(f, target="cuda")
    meta = k.artifact.meta
    assert [c for c, _ in meta["param_types"]] == [c for c, _ in LaunchABI.of(f).slots()]
    assert meta["param_names"] == ["A", "B", "k", "n", "scale", "eps"]
    assert (meta["n_buffers"], meta["n_ints"], meta["n_floats"]) == (2, 2, 2)
    assert eval(meta["kernels"][0]["grid"][0], {"ints": [0, 10], "min": min, "max": max}) == 3


def test_top_level_splits_workspaces_launches_and_the_rest_in_order():
    from tilelang.ir import stmt as S
    from tilelang.ir.buffer import Buffer
    from tilelang.backend.c.launch import top_level
    launch = _func().body
    assert isinstance(launch, S.KernelLaunch)
    ws = Buffer("W", (4,), "float32", "global")
    odd = [S.Evaluate(E.IntImm(0)), S.DeclBuffer(Buffer("s", (4,), "float32", "shared"))]
    workspaces, launches, rest = top_level(S.SeqStmt([S.DeclBuffer(ws), odd[0], launch, odd[1]]))
    assert workspaces == [ws] and launches == [launch] and rest == odd
    assert top_level(launch) == ([], [launch], [])


def test_the_gpu_backends_reject_function_level_statements():
    """CUDA and HIP run code only inside T.Kernel (backend/c/launch.py top_level)."""
    from tilelang.ir import stmt as S
    from tilelang.ir.buffer import Buffer
    from tilelang.backend.cuda.emit import module
    from tilelang.backend.hip import codegen as hip
    launch = _func().body
    shared = S.SeqStmt([S.DeclBuffer(Buffer("s", (4,), "float32", "shared")), launch])
    with pytest.raises(NotImplementedError, match="`s` \\(shared\\) is allocated outside T.Kernel"):
        module._top_level(shared)
    with pytest.raises(NotImplementedError, match="statements run inside `with T.Kernel"):
        module._top_level(S.SeqStmt([S.Evaluate(E.IntImm(0)), launch]))
    f = _func()
    with pytest.raises(Exception, match="Evaluate outside T.Kernel: on the HIP backend"):
        hip._top_level(f.with_body(S.SeqStmt([S.Evaluate(E.IntImm(0)), launch])))
    assert hip._top_level(f) == ([], [f.body])
