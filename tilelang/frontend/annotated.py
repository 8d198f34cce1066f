"""Kernels whose tensor parameters are annotated in the body (`A: T.Tensor(...)`), whose
outputs are `T.empty` tensors it returns, and whose sizes may be `T.const` names bound by
the annotations: traced into a PrimFunc. Used by eager `@tilelang.jit` kernels (with the
call's tensors bound to the annotations) and by `@T.prim_func` on such a body (no tensors:
the annotations alone; the returned outputs become the `tilelang_out_idx` attribute)."""
from __future__ import annotations

import ast
import inspect
import textwrap

from tilelang.arith.simplify import Simplifier, simplify
from tilelang.ir import builder as B
from tilelang.frontend.loop_scope import check_loop_var_scope
from tilelang.frontend.parser import rewritten_function, run_traced, raise_clean
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer
from tilelang.ir.errors import TileLangError
from tilelang.ir.function import PrimFunc
from tilelang.ir.visitor import walk


def annotated_names(func):
    """The names the body annotates (`A: ...`)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    names = set()
    for sub in ast.walk(tree):
        if isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name):
            names.add(sub.target.id)
    return names


def trace_annotated(func, arguments, consts=None, annotated=None, is_array=None):
    """(PrimFunc, out_idx, tensor parameter names) of `func` called with `arguments`
    (name -> value; tensors, for which `is_array` is true, bind the annotations; names
    not given are bound by their in-body annotation alone)."""
    from tilelang.language.proxy import TensorArg, TensorType, bind_tensor
    try:
        fn = rewritten_function(func)
        sig = inspect.signature(func)
        if annotated is None:
            annotated = annotated_names(func)
        anns = dict(getattr(func, "__annotations__", {}))
        call_args = {}
        from tilelang.ir.dtypes import DataType
        from tilelang.ir.expr import Var
        # `n: T.int32` / `p: T.ptr` in the signature: a runtime scalar parameter
        scalars = {n: Var(n, a) for n, a in anns.items() if n in sig.parameters and isinstance(a, DataType)}
        with B.building() as b:
            b.const_presets = dict(consts or {})
            arguments = dict(arguments)
            for name in sig.parameters:
                if name not in arguments:
                    if isinstance(anns.get(name), TensorType):
                        arguments[name] = anns[name]   # no tensor given: its signature annotation
                    else:
                        call_args[name] = None  # bound by its in-body annotation
            for name, v in arguments.items():
                if name in scalars:
                    call_args[name] = scalars[name]
                elif (is_array is not None and is_array(v)) or isinstance(v, TensorType):
                    arg = TensorArg(name, v)
                    ann = anns.get(name)
                    if isinstance(ann, TensorType):
                        call_args[name] = bind_tensor(name, arg, ann)
                    elif name in annotated:
                        call_args[name] = arg
                    else:  # never annotated: its actual shape and dtype
                        call_args[name] = bind_tensor(name, arg, TensorType(arg.shape, arg.dtype))
                else:
                    call_args[name] = v
            ret = run_traced(fn, **call_args)
            body = b.body()
            tensor_names = [n for n in sig.parameters if n in b.tensor_params or n in scalars]
            params = [b.tensor_params.get(n) or scalars[n] for n in tensor_names] + list(b.extra_params)
            attrs = dict(b.func_attrs)
        rets = ret if isinstance(ret, (tuple, list)) else ([ret] if ret is not None else [])
        out_idx = []
        for r in rets:
            if not isinstance(r, Buffer) or not any(r is p for p in params):
                raise TileLangError("an eager kernel must return the tensors it created with T.empty")
            out_idx.append(next(i for i, p in enumerate(params) if p is r))
        for i in out_idx:
            if i < len(tensor_names):
                raise TileLangError(f"`{params[i].name}` is an input; return only T.empty outputs")
        body = resolve_consts(params, body)
        check_loop_var_scope(body)
        src = fn.__tl_source__
        f = PrimFunc(func.__name__, params, body, attrs=attrs, source=(src.file, src.text, src.first_line))
        return f, out_idx, tensor_names
    except TileLangError as e:
        raise_clean(e)


def resolve_consts(params, body):
    """Replace `T.const` sizes by the values the annotations bound, in the body and in
    every buffer's shape."""
    from tilelang.ir.expr import const_int_value
    bufs = [p for p in params if isinstance(p, Buffer)]
    walk(body, lambda n: bufs.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    from tilelang.language.proxy import ConstVar
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
            cv = const_int_value(s)
            new.append(cv if cv is not None else s)
        buf.shape = tuple(new)
        if buf.strides:
            buf.strides = tuple(const_int_value(simplify(s)) if not isinstance(s, int) and
                                const_int_value(simplify(s)) is not None else s for s in buf.strides)
    return Simplifier().visit(body)
