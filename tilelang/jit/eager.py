"""Eager-style kernels: `@tilelang.jit` on a body that declares `T.const` sizes,
annotates its tensor arguments in the body, allocates outputs with `T.empty` and
returns them. Calling it compiles once per distinct argument signature and runs."""
from __future__ import annotations

import ast
import inspect
import textwrap

from tilelang.frontend import builder as B
from tilelang.frontend.parser import rewritten_function, run_traced, raise_clean
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer
from tilelang.ir.function import PrimFunc
from tilelang.ir.errors import TileLangError
from tilelang.ir.visitor import walk
from tilelang.arith.simplify import Simplifier, simplify
from tilelang.jit import arrays

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


def _annotated_names(func):
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    names = set()
    for sub in ast.walk(tree):
        if isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name):
            names.add(sub.target.id)
    return names


class EagerKernel:
    def __init__(self, func, jit_kwargs):
        self.func = func
        self.jit_kwargs = jit_kwargs
        self.sig = inspect.signature(func)
        self.cache = {}
        self._annotated = None
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__

    def __call__(self, *args, **kwargs):
        bound = self.sig.bind(*args, **kwargs)
        bound.apply_defaults()
        key = tuple((n, _arg_key(v)) for n, v in bound.arguments.items())
        entry = self.cache.get(key)
        if entry is None:
            entry = self.compile_bound(bound)
            self.cache[key] = entry
        kernel, names = entry
        return kernel(*[bound.arguments[n] for n in names])

    def get_tir(self, *args, **kwargs):
        bound = self.sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return self.trace(bound)[0]

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
        from tilelang.language.proxy import TensorArg, TensorType, bind_tensor, ConstVar
        try:
            fn = rewritten_function(self.func)
            if self._annotated is None:
                self._annotated = _annotated_names(self.func)
            anns = dict(getattr(self.func, "__annotations__", {}))
            call_args = {}
            with B.building() as b:
                b.const_presets = dict(consts or {})
                for name in self.sig.parameters:
                    if name not in bound.arguments:
                        call_args[name] = None  # bound by its in-body annotation
                for name, v in bound.arguments.items():
                    if arrays.is_array(v):
                        arg = TensorArg(name, v)
                        ann = anns.get(name)
                        if isinstance(ann, TensorType):
                            call_args[name] = bind_tensor(name, arg, ann)
                        elif name in self._annotated:
                            call_args[name] = arg
                        else:  # never annotated: its actual shape and dtype
                            call_args[name] = bind_tensor(name, arg, TensorType(arg.shape, arg.dtype))
                    else:
                        call_args[name] = v
                ret = run_traced(fn, **call_args)
                body = b.body()
                tensor_names = [n for n in self.sig.parameters if n in b.tensor_params]
                params = [b.tensor_params[n] for n in tensor_names] + list(b.extra_params)
            rets = ret if isinstance(ret, (tuple, list)) else ([ret] if ret is not None else [])
            out_idx = []
            for r in rets:
                if not isinstance(r, Buffer) or not any(r is p for p in params):
                    raise TileLangError("an eager kernel must return the tensors it created with T.empty")
                out_idx.append(next(i for i, p in enumerate(params) if p is r))
            for i in out_idx:
                if i < len(tensor_names):
                    raise TileLangError(f"`{params[i].name}` is an input; return only T.empty outputs")
            body = _resolve_consts(params, body)
            src = fn.__tl_source__
            func = PrimFunc(self.func.__name__, params, body, source=(src.file, src.text, src.first_line))
            return func, out_idx, tensor_names
        except TileLangError as e:
            raise_clean(e)


def _resolve_consts(params, body):
    """Replace `T.const` sizes by the values the annotations bound, in the body and in
    every buffer's shape."""
    from tilelang.language.proxy import ConstVar
    bufs = list(params)
    walk(body, lambda n: bufs.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    for buf in bufs:
        new = []
        for d in buf.shape:
            if isinstance(d, int):
                new.append(d)
                continue
            if isinstance(d, ConstVar) and d.const_value is None:
                raise TileLangError(f"T.const `{d.name}` is not bound by any tensor annotation",
                                    hint=f"annotate an argument with a shape that uses {d.name}")
            s = simplify(d)
            from tilelang.ir.expr import const_int_value
            cv = const_int_value(s)
            new.append(cv if cv is not None else s)
        buf.shape = tuple(new)
        if buf.strides:
            buf.strides = tuple(const_int_value(simplify(s)) if not isinstance(s, int) and
                                const_int_value(simplify(s)) is not None else s for s in buf.strides)
    return Simplifier().visit(body)
