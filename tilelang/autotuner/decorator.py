"""`@tilelang.autotune(configs=...)`, stacked above `@tilelang.jit(...)` (a factory of a
`@T.prim_func`, or an eager kernel: `fn.compile(N=...)` then tunes from its `T.const` sizes and
`fn(tensors)` tunes from the tensors' shapes and runs the best config):

    @tilelang.autotune(configs={"block_M": [64, 128], "block_N": [64, 128]}, ref_prog=ref)
    @tilelang.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128, block_N=128): ...

    kernel = matmul(1024, 1024, 1024)   # tunes once per problem, returns the best JITKernel

The factory's keyword arguments named by the configs are the tunables; the others
are the problem. Passing a tunable explicitly skips tuning and compiles that config.
"""
from __future__ import annotations

import functools
import inspect
import threading

from tilelang.autotuner import space
from tilelang.autotuner.tuner import AutoTuner
from tilelang.profiler.supply import TensorSupplyType


class AutoTuneImpl:
    def __init__(self, jit_impl, configs, warmup=25, rep=100, timeout=100, supply_type=TensorSupplyType.Auto,
                 ref_prog=None, supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01,
                 skip_check=False, manual_check_prog=None, cache_input_tensors=False, backend="event",
                 do_not_specialize=None, early_stop=False, early_stop_factor=2.0, strategy="exhaustive", budget=None,
                 seed=0, strategy_options=None, executor="local", ray_address=None):
        from tilelang.jit import JITImpl
        from tilelang.jit.eager import EagerKernel
        if not isinstance(jit_impl, (JITImpl, EagerKernel)):
            from tilelang.jit import jit
            if not callable(jit_impl) or hasattr(jit_impl, "prim_func"):
                raise TypeError("@tilelang.autotune decorates a kernel factory: put it above @tilelang.jit(...)")
            jit_impl = jit(jit_impl)
            if not isinstance(jit_impl, (JITImpl, EagerKernel)):
                raise TypeError("@tilelang.autotune needs a kernel factory (a function returning a "
                                "@T.prim_func, or an eager kernel with tensor annotations)")
        self.jit_impl = jit_impl
        self.configs = configs
        self.warmup, self.rep, self.timeout = warmup, rep, timeout
        self.profile = dict(supply_type=supply_type, ref_prog=ref_prog, supply_prog=supply_prog, rtol=rtol,
                            atol=atol, max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check,
                            manual_check_prog=manual_check_prog, cache_input_tensors=cache_input_tensors,
                            backend=backend)
        if early_stop and early_stop_factor < 1.0:
            raise ValueError(f"early_stop_factor must be >= 1.0, got {early_stop_factor}")
        self.early_stop, self.early_stop_factor = bool(early_stop), early_stop_factor
        self.do_not_specialize = _check_do_not_specialize(do_not_specialize, jit_impl.func)
        from tilelang.autotuner.search import make_strategy
        make_strategy(strategy, budget, seed, **(strategy_options or {}))   # bad names/budgets fail here
        if executor not in ("local", "ray"):
            raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
        self.search = dict(strategy=strategy, budget=budget, seed=seed, strategy_options=strategy_options,
                           executor=executor, ray_address=ray_address)
        self._results = {}
        self._lock = threading.Lock()
        self.last_result = None
        functools.update_wrapper(self, jit_impl.func)

    @property
    def func(self):
        return self.jit_impl.func

    def get_tuner(self, *args, **kwargs):
        jk = self.jit_impl.jit_kwargs
        t = AutoTuner(self.jit_impl, self.configs).set_profile_args(
            warmup=self.warmup, rep=self.rep, timeout=self.timeout, **self.profile)
        t.set_compile_args(out_idx=jk.get("out_idx"), target=jk.get("target"),
                           execution_backend=jk.get("execution_backend"), target_host=jk.get("target_host"),
                           verbose=jk.get("verbose"), pass_configs=jk.get("pass_configs"),
                           compile_flags=jk.get("compile_flags"))
        return t.set_kernel_parameters(args, kwargs)

    get_tunner = get_tuner  # the published spelling

    def _tunables_given(self, args, kwargs):
        try:
            sig = inspect.signature(self.jit_impl.func)
            bound = sig.bind_partial(*args, **kwargs).arguments
        except (TypeError, ValueError):
            bound = dict(kwargs)
        sample = space.expand_configs(self.configs, args, kwargs)
        names = set().union(*(set(c) for c in sample)) if sample else set()
        return bool(names & set(bound))

    def tune(self, *args, **kwargs):
        """The `AutotuneResult` for these problem arguments (cached per process)."""
        key = self._problem_key(args, kwargs)
        with self._lock:
            res = self._results.get(key)
            if res is None:
                res = self.get_tuner(*args, **kwargs).run(early_stop=self.early_stop,
                                                          early_stop_factor=self.early_stop_factor, **self.search)
                self._results[key] = res
            self.last_result = res
            return res

    def _problem_key(self, args, kwargs):
        """What a tuning result is kept under: the problem arguments, less the ones named in
        `do_not_specialize` (changing those reuses the result instead of tuning again)."""
        if not self.do_not_specialize:
            return space.normalize((list(args), kwargs))
        bound = inspect.signature(self.jit_impl.func).bind_partial(*args, **kwargs).arguments
        return space.normalize({k: v for k, v in bound.items() if k not in self.do_not_specialize})

    def __call__(self, *args, **kwargs):
        if self._tunables_given(args, kwargs):
            return self.jit_impl(*args, **kwargs)
        result = self.tune(*args, **kwargs)
        from tilelang.jit.eager import EagerKernel
        if isinstance(self.jit_impl, EagerKernel):
            # an eager kernel called with its tensors runs: with the best config
            return self.jit_impl(*args, **kwargs, **space.split_config(result.config)[0])
        return result.kernel

    def compile(self, *args, **kwargs):
        if self._tunables_given(args, kwargs):  # an explicit config: compile it (no tensors needed)
            return self.jit_impl.compile(*args, **kwargs)
        return self.tune(*args, **kwargs).kernel


def _check_do_not_specialize(names, func):
    if not names:
        return ()
    names = (names,) if isinstance(names, str) else tuple(names)
    params = inspect.signature(func).parameters
    unknown = [n for n in names if n not in params]
    if unknown:
        raise ValueError(f"do_not_specialize names {unknown}, which are not parameters of "
                         f"`{func.__name__}` ({', '.join(params)})")
    return names


def autotune(func=None, *, configs, warmup=25, rep=100, timeout=100, supply_type=TensorSupplyType.Auto,
             ref_prog=None, supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
             manual_check_prog=None, cache_input_tensors=False, backend="event", do_not_specialize=None,
             early_stop=False, early_stop_factor=2.0, strategy="exhaustive", budget=None, seed=0,
             strategy_options=None, executor="local", ray_address=None):
    """Decorate a `@tilelang.jit` kernel factory with a configuration space.

    configs: a list of dicts, a dict of lists (all combinations), or a callable
        taking the problem arguments and returning either.
    warmup, rep: timed warm-up and measured iterations per config; timeout: seconds
        allowed per config, for compiling and for benchmarking.
    ref_prog: reference taking the kernel's inputs and returning its outputs; each
        config must match it (rtol/atol/max_mismatched_ratio, or manual_check_prog)
        before it may win, unless skip_check.
    supply_prog: `supply_prog(params) -> inputs`; otherwise `supply_type`, or the
        tensors given with `set_autotune_inputs`.
    do_not_specialize: problem arguments whose value does not start a new tuning (the
        result found for the first value is reused).
    early_stop, early_stop_factor: skip the full timing of a config whose first estimate
        is already early_stop_factor times slower than the best so far.
    strategy, budget, seed, strategy_options: how to search the space ("exhaustive",
        "random", "halving", "model"; `AutoTuner.run` and `tilelang.autotuner.search`).
    executor, ray_address: "local", or "ray" to compile and benchmark on a Ray cluster.
    """
    def wrap(f):
        return AutoTuneImpl(f, configs, warmup=warmup, rep=rep, timeout=timeout, supply_type=supply_type,
                            ref_prog=ref_prog, supply_prog=supply_prog, rtol=rtol, atol=atol,
                            max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check,
                            manual_check_prog=manual_check_prog, cache_input_tensors=cache_input_tensors,
                            backend=backend, do_not_specialize=do_not_specialize, early_stop=early_stop,
                            early_stop_factor=early_stop_factor, strategy=strategy, budget=budget, seed=seed,
                            strategy_options=strategy_options, executor=executor, ray_address=ray_address)
    if func is not None:
        return wrap(func)
    return wrap
