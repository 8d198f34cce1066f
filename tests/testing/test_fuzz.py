"""The differential fuzzer (tilelang/testing/fuzz): a fixed-seed budget of random tile
programs run on the CPU backend and compared with their numpy references, the same
programs compiled for sm_90a with NVRTC, and tests of the fuzzer itself (determinism,
that a wrong result is caught, that the minimizer shrinks)."""
import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.backend.cuda.conftest import needs_nvrtc
from tilelang.testing.fuzz import generate, minimize, reference, run, spec
from tilelang.testing.fuzz.pool import run_all
from tilelang.testing.fuzz.spec import Binary, Cast, Const, Elementwise, Leaf, Reduce, ReduceOp, Unary

SEED = 2024
PER_FAMILY = 5      # 55 programs: about 25 s on the CPU and 12 s of NVRTC on a 2-core machine
JOBS = 2            # worker processes (a crashing kernel is reported, not fatal to pytest)


@pytest.fixture(scope="module")
def programs():
    return [p for fam in spec.FAMILIES for p in generate.generate_many(SEED, PER_FAMILY, [fam])]


def _failures(results):
    return "\n".join(f"#{i} {r.headline()}\n{r.detail[:1500]}" for i, r in enumerate(results) if not r.ok)


def test_fixed_seed_budget_on_the_cpu(programs):
    results = run_all(programs, "cpu", jobs=JOBS)
    assert all(r.ok for r in results), _failures(results)


@needs_nvrtc
def test_fixed_seed_budget_compiles_for_sm90a(programs):
    results = run_all(programs, "cuda", compile_only=True, arch="sm_90a", jobs=JOBS)
    assert all(r.ok for r in results), _failures(results)


# ------------------------------------------------------------------ the fuzzer itself

def test_generator_is_deterministic_per_seed():
    a = generate.generate_many(7, 40)
    assert a == generate.generate_many(7, 40)
    assert a != generate.generate_many(8, 40)
    # any one program can be regenerated alone, and its description reads back
    assert generate.generate(generate.program_seed(7, 13)) == a[13]
    assert all(spec.parse(repr(p)) == p for p in a)


def test_every_family_is_generated_valid_and_renders():
    progs = generate.generate_many(3, 300)
    assert {spec.family(p) for p in progs} == set(spec.FAMILIES)
    from tilelang.testing.fuzz.render import render
    for p in progs:
        spec.validate(p)
        compile(render(p), f"<{spec.family(p)}>", "exec")
        calls = reference.calls(p)
        assert calls and all(set(reference.expected(p, c)) == {n for n, _ in reference.outputs(p)} for c in calls)


def test_known_failures_are_left_out_unless_asked_for(monkeypatch):
    from tilelang.testing.fuzz import known, spec
    monkeypatch.setitem(known.KNOWN_FAILURES, "every Gemm (for this test)", lambda p: spec.family(p) == "Gemm")
    with_known = generate.generate_many(2, 200, include_known=True)
    hits = {generate.known_failure(p) for p in with_known} - {None}
    assert hits == set(known.KNOWN_FAILURES)
    assert not any(generate.known_failure(p) for p in generate.generate_many(2, 200))


def test_inputs_are_deterministic():
    p = generate.generate(5)
    for c1, c2 in zip(reference.calls(p), reference.calls(p)):
        for k in c1.args:
            assert np.array_equal(np.asarray(c1.args[k]), np.asarray(c2.args[k]))


def _reduce_program():
    return Reduce(seed=1, M=40, N=24, R=16, C=16, threads=64, dtype="float32", scope="fragment",
                  ops=(ReduceOp("sum", 1, False), ReduceOp("absmax", 0, True)))


def test_a_perturbed_output_is_reported_as_a_mismatch():
    p = _reduce_program()
    assert run.check(p, "cpu").ok

    def off_by_a_little(name, arr):
        if name == "O0":
            arr[1, 5] += 1e-3
    r = run.check(p, "cpu", hook=off_by_a_little)
    assert r.status == "mismatch" and "O0" in r.detail and "(1, 5)" in r.detail


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32"])
def test_a_wrong_reference_is_reported_as_a_mismatch(dtype):
    # the kernel computes X0 * X1 + X0; the reference is told X0 * X1 - X0
    expr = Binary("add", Binary("mul", Leaf(0), Leaf(1)), Leaf(0))
    p = Elementwise(seed=3, M=37, N=45, bm=16, bn=32, threads=128, inputs=(dtype, dtype), out_dtype=dtype,
                    expr=expr, guard="copy", scopes=("shared", "fragment"))
    wrong = dataclasses.replace(p, expr=Binary("sub", expr.lhs, Leaf(0)))
    func, _ = run.load_kernel(p)
    kernel = run.build(func, "cpu")
    for call in reference.calls(p):
        got = run.call_kernel(kernel, p, call, "cpu")
        assert not run.compare(p, call, got)
        assert run.compare(wrong, call, got)


def test_a_gemm_chain_with_another_scale_is_reported_as_a_mismatch():
    # the attention pattern (S = Q K^T, P = cast(S * scale), O += P V): the reference of the
    # program with half the scale rejects the kernel's output
    p = spec.GemmChain(seed=5, M=96, N=80, D=32, bm=32, bn=32, threads=128, in_dtype="float16",
                       out_dtype="float32", scale=0.5, num_stages=2)
    func, _ = run.load_kernel(p)
    kernel = run.build(func, "cpu")
    call = reference.calls(p)[0]
    got = run.call_kernel(kernel, p, call, "cpu")
    assert not run.compare(p, call, got)
    (m,) = run.compare(dataclasses.replace(p, scale=0.25), call, got)
    assert m.bad > m.total // 2


def test_staging_with_another_exchange_or_histogram_is_reported_as_a_mismatch():
    # per-thread rounds through shared memory (the pattern the barrier planner leaves without a
    # barrier between a thread's own rounds): the reference of another partner thread, or of
    # another histogram, rejects the kernel's output
    p = spec.Staging(seed=6, blocks=2, threads=64, dtype="int32", rounds=3, lanes=4, split="rowcol", width=32,
                     vectorized=True, exchange=("shift", 5), bins=7, a=3, c=1)
    func, _ = run.load_kernel(p)
    kernel = run.build(func, "cpu")
    call = reference.calls(p)[0]
    got = run.call_kernel(kernel, p, call, "cpu")
    assert not run.compare(p, call, got)
    (m,) = run.compare(dataclasses.replace(p, exchange=("shift", 6)), call, got)
    assert m.bad > m.total // 2
    assert run.compare(dataclasses.replace(p, c=2), call, got)


def test_a_lost_float32_precision_is_caught():
    # a kernel that rounds x * 3 through float16 passes its own check, but not the check of
    # the program that keeps float32 (the bound knows where each cast rounds)
    inner = Binary("mul", Leaf(0), Const(3.0, "float32"))
    rounded = Elementwise(seed=4, M=64, N=64, bm=32, bn=32, threads=128, inputs=("float32",), out_dtype="float32",
                          expr=Cast("float32", Cast("float16", inner)))
    exact = dataclasses.replace(rounded, expr=inner)
    func, _ = run.load_kernel(rounded)
    kernel = run.build(func, "cpu")
    call = reference.calls(rounded)[0]
    got = run.call_kernel(kernel, rounded, call, "cpu")
    assert not run.compare(rounded, call, got)
    (m,) = run.compare(exact, call, got)
    assert m.bad > m.total // 2


def test_minimizer_shrinks_a_failing_description():
    # the "bug": any Elementwise whose expression still has an exp node fails
    def has_exp(e):
        return isinstance(e, Unary) and e.op == "exp" or any(has_exp(c) for c in spec.children(e))

    big = next(p for p in generate.generate_many(21, 400, ["Elementwise"])
               if has_exp(p.expr) and spec.expr_size(p.expr) >= 8)
    small, tries = minimize.minimize(big, lambda p: has_exp(p.expr), max_tries=500)
    assert has_exp(small.expr) and spec.validate(small)
    assert spec.expr_size(small.expr) <= 3 < spec.expr_size(big.expr)
    assert spec.size(small) < spec.size(big)
    assert small.guard == "if" and len(small.inputs) == 1


def test_minimizer_drops_irrelevant_reduce_ops():
    p = Reduce(seed=2, M=100, N=90, R=32, C=64, threads=256, dtype="float16", scope="shared",
               ops=(ReduceOp("sum", 1, False), ReduceOp("absmax", 0, False), ReduceOp("min", -1, True)))
    small, _ = minimize.minimize(p, lambda q: any(o.kind == "absmax" for o in q.ops))
    assert small.ops == (ReduceOp("absmax", 0, True),)
    assert small.M == 1 and small.N == 1 and small.threads == 32 and small.dtype == "float32"


def test_a_repro_file_runs_standalone(tmp_path):
    from tilelang.testing.fuzz import report
    p = _reduce_program()
    path = report.write_repro(run.check(p, "cpu"), str(tmp_path), "repro.py", "cpu")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root] + sys.path))
    out = subprocess.run([sys.executable, path, "cpu"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Reduce seed=1 on cpu: ok" in out.stdout


def test_cli_writes_a_summary(tmp_path, capsys):
    from tilelang.testing.fuzz.__main__ import main
    assert main(["--target", "cpu", "--count", "2", "--seed", "5", "--jobs", "1", "--out", str(tmp_path)]) == 0
    assert "2 programs" in capsys.readouterr().out
    assert (tmp_path / "summary.md").exists() and (tmp_path / "summary.json").exists()


def test_a_value_past_the_range_of_its_dtype_rounds_to_infinity():
    # an int32 cube (-41 ** 3 = -68921) stored as float16: -inf, as CUDA's __int2half_rn gives it
    from tilelang.testing.fuzz import numerics as nx
    a = nx.Approx.exact(np.array([-68921.0, 1000.0, 65519.0]))
    y = nx.cast(a, "float16", "int32")
    assert y.value[0] == -np.inf and y.err[0] == 0 and np.isfinite(y.value[1:]).all()
    assert nx.compare("Y", np.array([-np.inf, 1000.0, 65504.0], np.float16), y, "float16") is None
    assert nx.compare("Y", np.array([-65504.0, 1000.0, 65504.0], np.float16), y, "float16") is not None
    edge = nx.cast(nx.Approx(np.array([65520.0]), np.array([1.0])), "float16", "float32")
    assert np.isinf(edge.err[0])   # either way is right
    assert nx.compare("Y", np.array([np.inf], np.float16), edge, "float16") is None
    assert nx.compare("Y", np.array([np.nan], np.float16), edge, "float16") is not None
