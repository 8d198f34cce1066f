"""`tilelang.jit` and `tilelang.compile`."""
from __future__ import annotations

import os

import functools

from tilelang.ir.function import PrimFunc
from tilelang.ir.errors import TileLangError
from tilelang.jit.kernel import JITKernel
from tilelang.jit.eager import EagerKernel, is_eager


def compile(func, out_idx=None, execution_backend="auto", target="auto", target_host=None,  # noqa: A001
            verbose=False, pass_configs=None, compile_flags=None):
    """Compile a PrimFunc for a target; returns a callable `JITKernel`."""
    if not isinstance(func, PrimFunc):
        raise TileLangError(f"tilelang.compile expects a @T.prim_func, got {type(func).__name__}")
    try:
        return JITKernel(func, out_idx=out_idx, target=target, execution_backend=execution_backend,
                         verbose=verbose, pass_configs=pass_configs, compile_flags=compile_flags)
    except TileLangError as e:
        raise e.with_traceback(None) from None


def par_compile(funcs, out_idx=None, target="auto", num_workers=None, ignore_error=False, **kwargs):
    """Compile several PrimFuncs on a thread pool (the backend compilers run outside the
    GIL); results in the order given. ignore_error=True: a function that fails to compile
    gives None (with a warning) instead of raising."""
    import concurrent.futures as cf
    import warnings
    funcs = list(funcs)
    if not funcs:
        return []
    workers = num_workers or min(len(funcs), os.cpu_count() or 1)
    with cf.ThreadPoolExecutor(max(1, workers), thread_name_prefix="tl-par-compile") as ex:
        futures = [ex.submit(compile, f, out_idx=out_idx, target=target, **kwargs) for f in funcs]
        out = []
        for i, fut in enumerate(futures):
            try:
                out.append(fut.result())
            except Exception as e:  # noqa: BLE001
                if not ignore_error:
                    raise
                warnings.warn(f"par_compile: function {i} ({getattr(funcs[i], 'name', '?')}) did not compile: "
                              f"{e}", stacklevel=2)
                out.append(None)
    return out



def not_a_prim_func(fn, got):
    """The error for a kernel factory that returned something other than a prim_func,
    located at the factory's `def` line."""
    from tilelang.ir.errors import located
    from tilelang.ir.span import Span
    code = getattr(fn, "__code__", None)
    span = Span(code.co_filename, code.co_firstlineno, 0, None) if code is not None else None
    name = getattr(fn, "__name__", repr(fn))
    hint = ("the factory has no `return`: end it with `return <the @T.prim_func it defines>`"
            if got is None else "return the @T.prim_func defined in the factory")
    return located(TypeError, f"`{name}` must return a @T.prim_func, returned {type(got).__name__}",
                   span=span, hint=hint)

class JITImpl:
    """A factory decorated with `@tilelang.jit`: calling it with Python values builds
    the PrimFunc and compiles it once per distinct set of arguments."""

    def __init__(self, func, **jit_kwargs):
        self.func = func
        self.jit_kwargs = jit_kwargs
        self._kernels = {}
        functools.update_wrapper(self, func)

    def _key(self, args, kwargs):
        try:
            k = (args, tuple(sorted(kwargs.items())))
            hash(k)
            return k
        except TypeError:
            return repr((args, sorted(kwargs.items())))

    def get_tir(self, *args, **kwargs):
        pf = self.func(*args, **kwargs)
        if not isinstance(pf, PrimFunc):
            raise not_a_prim_func(self.func, pf)
        return pf

    def compile(self, *args, **kwargs):
        key = self._key(args, kwargs)
        k = self._kernels.get(key)
        if k is None:
            pf = self.get_tir(*args, **kwargs)
            k = compile(pf, **{kk: v for kk, v in self.jit_kwargs.items() if kk in (
                "out_idx", "target", "execution_backend", "verbose", "pass_configs", "compile_flags",
                "target_host")})
            self._kernels[key] = k
        return k

    def par_compile(self, configs, num_workers=None, ignore_error=False):
        """Compile the kernels of several factory argument sets (dicts of keyword arguments
        or tuples of positional ones) in parallel; see `tilelang.jit.par_compile`."""
        funcs = []
        for c in configs:
            if not isinstance(c, (dict, tuple)):
                raise ValueError(f"par_compile: a config is a dict or a tuple, got {type(c).__name__}")
            funcs.append(self.get_tir(**c) if isinstance(c, dict) else self.get_tir(*c))
        jk = {k: v for k, v in self.jit_kwargs.items() if k in ("out_idx", "target", "execution_backend",
                                                                 "pass_configs", "compile_flags", "verbose")}
        return par_compile(funcs, num_workers=num_workers, ignore_error=ignore_error, **jk)

    def get_kernel_source(self, *args, **kwargs):
        """The generated source of the kernel these factory arguments build."""
        return self.compile(*args, **kwargs).get_kernel_source()

    def __call__(self, *args, **kwargs):
        try:
            return self.compile(*args, **kwargs)
        except TileLangError as e:
            raise e.with_traceback(None) from None


def jit(func=None, *, out_idx=None, target="auto", target_host=None, execution_backend="auto", verbose=False,
        pass_configs=None, debug_root_path=None, compile_flags=None, **kwargs):
    """`@tilelang.jit` (with or without arguments) on a kernel factory, an eager kernel
    body, or a PrimFunc."""
    jk = dict(out_idx=out_idx, target=target, execution_backend=execution_backend, verbose=verbose,
              pass_configs=pass_configs, compile_flags=compile_flags, target_host=target_host)

    def wrap(f):
        if isinstance(f, PrimFunc):
            return compile(f, **{k: v for k, v in jk.items() if k != "target_host"})
        if is_eager(f):
            return EagerKernel(f, jk)
        return JITImpl(f, **jk)
    if func is None:
        return wrap
    return wrap(func)


lazy_jit = jit
