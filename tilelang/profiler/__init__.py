"""`Profiler` (from `kernel.get_profiler()`), `do_bench`, `TensorSupplyType`."""
from __future__ import annotations

import numpy as np

from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import const_int_value
from tilelang.ir.errors import TileLangError
from tilelang.profiler.bench import do_bench
from tilelang.profiler.supply import TensorSupplyType, make_tensor
from tilelang.jit import arrays


class Profiler:
    def __init__(self, kernel, tensor_supply_type=TensorSupplyType.Auto):
        self.kernel = kernel
        self.supply_type = tensor_supply_type
        self._inputs = None

    @property
    def device(self):
        return "cpu" if self.kernel.target.kind == "cpu" else "cuda"

    def _make_inputs(self):
        ins = []
        for i in self.kernel.in_idx:
            p = self.kernel.params[i]
            if not isinstance(p, Buffer):
                raise TileLangError(f"the profiler cannot supply scalar parameter `{p.name}`",
                                    hint="pass input_tensors explicitly")
            shape = []
            for d in p.shape:
                c = const_int_value(d)
                if c is None:
                    raise TileLangError(f"the profiler cannot supply `{p.name}` with dynamic shape "
                                        f"{[str(s) for s in p.shape]}", hint="pass input_tensors explicitly")
                shape.append(c)
            ins.append(make_tensor(shape, p.dtype, self.supply_type, self.device))
        return ins

    def _get_inputs(self, with_output=False):
        if self._inputs is None:
            self._inputs = self._make_inputs()
        return self._inputs

    def run_once(self, func=None):
        ins = self._get_inputs()
        return (func or self.kernel)(*ins)

    def assert_allclose(self, reference_program, input_tensors=None, atol=1e-2, rtol=1e-2,
                        max_mismatched_ratio=0.01):
        ins = list(input_tensors) if input_tensors is not None else self._get_inputs()
        outs = self.kernel(*ins)
        ref = reference_program(*ins)
        outs = [] if outs is None else (list(outs) if isinstance(outs, (list, tuple)) else [outs])
        refs = [] if ref is None else (list(ref) if isinstance(ref, (list, tuple)) else [ref])
        if len(outs) != len(refs):
            raise AssertionError(f"the kernel returned {len(outs)} output(s), the reference {len(refs)}")
        for k, (o, r) in enumerate(zip(outs, refs)):
            assert_close(o, r, atol, rtol, max_mismatched_ratio, name=f"output {k}")

    def do_bench(self, func=None, warmup=25, rep=100, n_warmup=1, n_repeat=1, input_tensors=None,
                 backend="event", quantiles=None, return_mode="mean"):
        ins = list(input_tensors) if input_tensors is not None else self._get_inputs()
        fn = func or self.kernel
        return do_bench(lambda: fn(*ins), warmup=warmup, rep=rep, quantiles=quantiles,
                        return_mode=return_mode, backend=backend,
                        device="cpu" if self.kernel.target.kind == "cpu" else None)


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
