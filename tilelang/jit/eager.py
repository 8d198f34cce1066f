"""Eager-style kernels: `@tilelang.jit` on a body that declares `T.const` sizes,
annotates its tensor arguments in the body, allocates outputs with `T.empty` and
returns them. Calling it compiles once per distinct argument signature and runs."""
from __future__ import annotations

import ast
import inspect
import sys
import textwrap

from tilelang.frontend.annotated import annotated_names, trace_annotated
from tilelang import arrays

EAGER_CALLS = {"const", "empty", "Kernel", "dynamic", "make_tensor"}


def is_eager(func) -> bool:
    """A body that itself builds the kernel (T.Kernel / T.const / T.empty / in-body
    tensor annotations) rather than returning a nested @T.prim_func."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return False
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        return False
    for a in fdef.args.args + fdef.args.kwonlyargs:
        if a.annotation is not None and "Tensor" in ast.unparse(a.annotation):
            return True

    def scan(nodes):
        # a factory that defines a @T.prim_func anywhere is classic, whatever it computes
        # before (e.g. `S = T.dynamic("S")` for the nested function's shapes)
        for node in nodes:
            for sub in ast.walk(node):
                if isinstance(sub, ast.FunctionDef) and any("prim_func" in ast.unparse(d) for d in sub.decorator_list):
                    return "classic"
        for node in nodes:
            for sub in ast.walk(node):
                if isinstance(sub, ast.AnnAssign) and sub.value is None and "Tensor" in ast.unparse(sub.annotation):
                    return "eager"
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                        sub.func.attr in EAGER_CALLS and isinstance(sub.func.value, ast.Name):
                    return "eager"
        return None
    return scan(fdef.body) == "eager"


def _arg_key(v):
    if arrays.is_array(v):
        return ("tensor", tuple(int(s) for s in v.shape), str(arrays.array_dtype(v)), arrays.device_type(v),
                arrays.array_strides(v))
    try:
        hash(v)
        return ("value", type(v).__name__, v)
    except TypeError:
        return ("repr", repr(v))


def _fast_key(v):
    """What `_arg_key` distinguishes, computed without conversions: tensors by shape,
    dtype, device and strides; other values by type and value."""
    t = type(v)
    if t.__module__ == "torch" and t.__name__ in ("Tensor", "Parameter"):
        return (t, v.shape, v.dtype, v.device, v.stride())
    if t.__module__ == "numpy" and t.__name__ == "ndarray":
        return (t, v.shape, v.dtype.str, v.strides)
    try:
        hash(v)
        return (t, v)
    except TypeError:
        return (t, repr(v))


def _positional_key_function(n, scalar_positions):
    """`key(args)` for a call with `n` positional arguments: what `_fast_key` gives, with a
    torch tensor's fields read inline (no call per argument: ~1 us less a call); runtime
    scalars are not part of it."""
    torch = sys.modules.get("torch")
    if n <= 0 or torch is None:   # no torch tensors to expect
        return lambda args: tuple(None if i in scalar_positions else _fast_key(v) for i, v in enumerate(args))
    items = []
    for i in range(n):
        a = f"a{i}"
        items.append("None" if i in scalar_positions else
                     f"(({a}.shape, {a}.dtype, {a}.device, {a}.stride()) if type({a}) is Tensor else fk({a}))")
    src = (f"def key(args):\n    {''.join(f'a{i}, ' for i in range(n))}= args\n"
           f"    return ({''.join(x + ', ' for x in items)})\n")
    g = {"Tensor": torch.Tensor, "fk": _fast_key}
    exec(compile(src, "<tilelang eager key>", "exec"), g)  # noqa: S102 - our own code
    return g["key"]


class EagerKernel:
    def __init__(self, func, jit_kwargs):
        self.func = func
        self.jit_kwargs = jit_kwargs
        self.sig = inspect.signature(func)
        self.cache = {}
        self._annotated = None
        from tilelang.ir.dtypes import DataType
        # parameters annotated with a dtype (T.int32, T.ptr) are runtime scalars, not specializations
        self._scalars = {n for n, a in getattr(func, "__annotations__", {}).items() if isinstance(a, DataType)}
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        positional = [n for n, p in self.sig.parameters.items()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        plain = len(positional) == len(self.sig.parameters)
        self._positions = {n: i for i, n in enumerate(positional)} if plain else {None: -1}
        self._scalar_positions = {i for n, i in self._positions.items() if n in self._scalars}
        self._fast = {}   # positional-call key -> (kernel, argument positions or None: all, in order)
        self._n_positional = len(self._positions)
        self._key_of = self._first_key   # built at the first call: torch may be imported after the decorator

    def _first_key(self, args):
        key_of = _positional_key_function(self._n_positional, self._scalar_positions)
        if sys.modules.get("torch") is not None:
            self._key_of = key_of
        return key_of(args)

    def __call__(self, *args, **kwargs):
        if not kwargs and len(args) == self._n_positional:
            # every parameter given by position: a cheap key (no signature binding), the
            # usual way a benchmark loop calls the kernel
            key = self._key_of(args)
            hit = self._fast.get(key)
            if hit is not None:
                kernel, idx = hit
                return kernel(*args) if idx is None else kernel(*[args[i] for i in idx])
        else:
            key = None
        bound = self.sig.bind(*args, **kwargs)
        bound.apply_defaults()
        full = tuple((n, "scalar" if n in self._scalars else _arg_key(v)) for n, v in bound.arguments.items())
        entry = self.cache.get(full)
        if entry is None:
            entry = self.compile_bound(bound)
            self.cache[full] = entry
        kernel, names = entry
        if key is not None:
            idx = [self._positions[n] for n in names]
            self._fast[key] = (kernel, None if idx == list(range(len(args))) else idx)
        return kernel(*[bound.arguments[n] for n in names])

    def get_tir(self, *args, **kwargs):
        """The PrimFunc for these arguments, in the forms `compile` takes (tensors may be
        left out: their annotations give their shapes; `T.const` sizes by name)."""
        consts = {k: kwargs.pop(k) for k in list(kwargs) if k not in self.sig.parameters}
        bound = self.sig.bind_partial(*args, **kwargs)
        bound.apply_defaults()
        return self.trace(bound, consts)[0]

    def elaborate(self, *args, **kwargs):
        """(PrimFunc, out_idx) for these arguments, in the forms `compile` takes: what the
        autotuner compiles for each config (tilelang/autotuner/tuner.py)."""
        consts = {k: kwargs.pop(k) for k in list(kwargs) if k not in self.sig.parameters}
        bound = self.sig.bind_partial(*args, **kwargs)
        bound.apply_defaults()
        func, out_idx, _ = self.trace(bound, consts)
        return func, out_idx

    def compile(self, *args, **kwargs):
        """Compile without tensors: sizes declared with `T.const` may be given by name
        (`fn.compile(M=1024, N=1024)`); tensor parameters come from their annotations."""
        consts = {k: kwargs.pop(k) for k in list(kwargs) if k not in self.sig.parameters}
        bound = self.sig.bind_partial(*args, **kwargs)
        bound.apply_defaults()
        return self.compile_bound(bound, consts)[0]

    def par_compile(self, configs, **kwargs):
        return [self.compile(**c) for c in configs]

    def get_kernel_source(self, *args, **kwargs):
        """The generated source for these arguments (same forms as `compile`)."""
        return self.compile(*args, **kwargs).get_kernel_source()

    def compile_bound(self, bound, consts=None):
        from tilelang.jit.kernel import JITKernel
        func, out_idx, names = self.trace(bound, consts)
        kw = {k: v for k, v in self.jit_kwargs.items() if k in ("target", "pass_configs", "compile_flags",
                                                                  "verbose", "execution_backend")}
        return JITKernel(func, out_idx=out_idx, **kw), names

    def trace(self, bound, consts=None):
        if self._annotated is None:
            self._annotated = annotated_names(self.func)
        return trace_annotated(self.func, dict(bound.arguments), consts, self._annotated, arrays.is_array)
