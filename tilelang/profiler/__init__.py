"""`Profiler` (from `kernel.get_profiler()`), `do_bench`, `TensorSupplyType`."""
from __future__ import annotations

import numpy as np

from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import const_int_value
from tilelang.ir.errors import TileLangError
from tilelang.profiler.bench import do_bench
from tilelang.profiler.supply import TensorSupplyType, make_tensor
from tilelang import arrays


class Profiler:
    """Checks and times a `JITKernel` on generated (or given) inputs."""

    def __init__(self, kernel, tensor_supply_type=TensorSupplyType.Auto):
        self.kernel = kernel
        self.supply_type = tensor_supply_type
        self._inputs = None

    @property
    def device(self):
        return "cpu" if self.kernel.target.kind == "cpu" else "cuda"

    @property
    def func(self):
        return self.kernel

    def __call__(self, *args, **kwargs):
        return self.kernel(*args, **kwargs)

    def _get_params(self, with_output=False):
        """The kernel's parameters the caller passes (all of them with `with_output`)."""
        k = self.kernel
        return [p for i, p in enumerate(k.params) if with_output or i not in k.out_idx]

    def _make_inputs(self, with_output=False, dynamic_symbolic_constraints=None):
        dyn = dict(dynamic_symbolic_constraints or {})
        ins = []
        for p in self._get_params(with_output):
            if not isinstance(p, Buffer):
                raise TileLangError(f"the profiler cannot supply scalar parameter `{p.name}`",
                                    hint="pass input_tensors explicitly")
            shape = []
            for d in p.shape:
                c = const_int_value(d)
                if c is None:
                    c = _bind_dynamic(d, dyn)
                if c is None:
                    raise TileLangError(f"the profiler cannot supply `{p.name}` with dynamic shape "
                                        f"{[str(s) for s in p.shape]}",
                                        hint="pass input_tensors, or dynamic_symbolic_constraints={'m': 1024}")
                shape.append(c)
            ins.append(make_tensor(shape, p.dtype, self.supply_type, self.device))
        return ins

    def _get_inputs(self, with_output=False, dynamic_symbolic_constraints=None):
        if with_output or dynamic_symbolic_constraints:
            return self._make_inputs(with_output, dynamic_symbolic_constraints)
        if self._inputs is None:
            self._inputs = self._make_inputs()
        return self._inputs

    def run_once(self, func=None):
        ins = self._get_inputs()
        return (func or self.kernel)(*ins)

    def _run_both(self, reference_program, input_tensors):
        ins = list(input_tensors) if input_tensors is not None else self._get_inputs()
        ref = reference_program(*ins)
        _sync(self.device)
        outs = self.kernel(*ins)
        _sync(self.device)
        return _as_list(outs), _as_list(ref)

    def assert_allclose(self, reference_program, input_tensors=None, atol=1e-2, rtol=1e-2,
                        max_mismatched_ratio=0.01):
        """Run the reference then the kernel on the same inputs and compare every
        output: at most `max_mismatched_ratio` of the elements may differ by more
        than `atol + rtol * |ref|`."""
        outs, refs = self._run_both(reference_program, input_tensors)
        if len(outs) != len(refs):
            raise AssertionError(f"the kernel returned {len(outs)} output(s), the reference {len(refs)}")
        for k, (o, r) in enumerate(zip(outs, refs)):
            if o is None or r is None:  # a reference may opt out of checking an output
                continue
            assert_close(o, r, atol, rtol, max_mismatched_ratio, name=f"output {k}")

    def manual_assert_close(self, reference_program, input_tensors=None, manual_check_prog=None):
        """Like `assert_allclose`, with the comparison done by
        `manual_check_prog(kernel_outputs, reference_outputs)` (which raises)."""
        outs, refs = self._run_both(reference_program, input_tensors)
        if len(outs) != len(refs):
            raise AssertionError(f"the kernel returned {len(outs)} output(s), the reference {len(refs)}")
        manual_check_prog(outs, refs)

    def assert_consistent(self, repeat=10):
        """Run the kernel `repeat` more times on the same inputs; every run must give
        bit-identical outputs (finds races)."""
        ins = self._get_inputs()
        first = [arrays.to_numpy(o).copy() for o in _as_list(self.kernel(*ins))]
        for r in range(repeat):
            for k, (a, o) in enumerate(zip(first, _as_list(self.kernel(*ins)))):
                b = arrays.to_numpy(o)
                if not np.array_equal(a, b, equal_nan=True):
                    n = int((a != b).sum())
                    raise AssertionError(f"output {k} changed between runs (run {r + 1}: {n} elements differ)")

    def do_bench(self, func=None, warmup=25, rep=100, n_warmup=0, n_repeat=0, input_tensors=None,
                 backend="event", quantiles=None, return_mode="mean", dynamic_symbolic_constraints=None,
                 device=None, early_stop_baseline=None):
        """Time `func` (default: the kernel) on the profiler's inputs, in ms."""
        if input_tensors is not None:
            ins = list(input_tensors)
        else:
            ins = self._get_inputs(dynamic_symbolic_constraints=dynamic_symbolic_constraints)
        fn = func or self.kernel
        if self.kernel.target.kind == "cpu":
            device = "cpu"
        return do_bench(lambda: fn(*ins), warmup=warmup, rep=rep, _n_warmup=n_warmup, _n_repeat=n_repeat,
                        quantiles=quantiles, return_mode=return_mode, backend=backend, device=device,
                        early_stop_baseline=early_stop_baseline)


def _bind_dynamic(dim, constraints):
    from tilelang.ir.expr import Var, IntImm
    from tilelang.ir.visitor import substitute
    from tilelang.arith.simplify import simplify
    if isinstance(dim, Var):
        v = constraints.get(dim.name)
        return int(v) if v is not None else None
    try:
        from tilelang.ir.visitor import walk
        found = []
        walk(dim, lambda n: found.append(n) if isinstance(n, Var) else None)
        if any(v.name not in constraints for v in found):
            return None
        return const_int_value(simplify(substitute(dim, {v: IntImm(int(constraints[v.name])) for v in found})))
    except Exception:  # noqa: BLE001 - an expression we cannot evaluate: ask for input_tensors
        return None


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _sync(device):
    if device != "cpu":
        try:
            import torch
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        except ImportError:
            pass


def assert_close(out, ref, atol=1e-2, rtol=1e-2, max_mismatched_ratio=0.0, name="output"):
    a = arrays.to_numpy(out).astype(np.float64)
    b = arrays.to_numpy(ref).astype(np.float64)
    if a.shape != b.shape:
        raise AssertionError(f"{name}: shape {a.shape} != reference {b.shape}")
    bad = ~np.isclose(a, b, atol=atol, rtol=rtol, equal_nan=True)
    n = int(bad.sum())
    if n > max_mismatched_ratio * a.size:
        idx = np.argwhere(bad)[:5]
        detail = ", ".join(f"{tuple(i)}: {a[tuple(i)]:.6g} vs {b[tuple(i)]:.6g}" for i in idx)
        raise AssertionError(f"{name}: {n} of {a.size} elements differ beyond atol={atol}, rtol={rtol} "
                             f"(allowed {max_mismatched_ratio:.2%}); first: {detail}")
