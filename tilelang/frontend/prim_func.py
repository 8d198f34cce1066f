"""`@T.prim_func`: trace a kernel function into a `PrimFunc`."""
from __future__ import annotations

import inspect

from tilelang.ir import builder as B
from tilelang.frontend.loop_scope import check_loop_var_scope
from tilelang.frontend.parser import rewritten_function, run_traced, raise_clean
from tilelang.ir.buffer import Buffer
from tilelang.ir.dtypes import DataType, as_dtype
from tilelang.ir.expr import Var
from tilelang.ir.function import PrimFunc
from tilelang.ir.errors import TileLangError
from tilelang.ir import stmt as S


def _annotations(func, fn):
    anns = dict(getattr(func, "__annotations__", {}))
    for k, v in list(anns.items()):
        if isinstance(v, str) and not isinstance(v, DataType):
            anns[k] = eval(v, fn.__globals__)  # noqa: S307 - the user's own annotation text
    return anns


def make_param(name, ann):
    from tilelang.language.proxy import TensorType
    if isinstance(ann, TensorType):
        return ann.make_buffer(name)
    if isinstance(ann, DataType):
        return Var(name, ann)
    if ann is int:
        return Var(name, "int32")
    if ann is float:
        return Var(name, "float32")
    if isinstance(ann, Var):   # `x: T.int32()`: that variable, named after the parameter
        ann.name = name
        return ann
    raise TileLangError(f"parameter `{name}` needs an annotation such as T.Tensor((M, N), 'float16') "
                        f"or T.int32, got {ann!r}")


def parse(func, name=None) -> PrimFunc:
    try:
        fn = rewritten_function(func)
        anns = _annotations(func, fn)
        missing = [p for p in inspect.signature(func).parameters if p not in anns]
        if missing:
            return _parse_annotated_in_body(func, missing, name)
        params = []
        for pname in inspect.signature(func).parameters:
            params.append(make_param(pname, anns[pname]))
        with B.building() as b:
            ret = run_traced(fn, *params)
            body = b.body()
            attrs = dict(b.func_attrs)
            outputs = list(b.extra_params)   # T.empty tensors: parameters after the declared ones
            params = [b.matched_params.get(id(p), p) for p in params]   # T.handle + T.match_buffer
        check_loop_var_scope(body)
        src = fn.__tl_source__
        f = PrimFunc(name or func.__name__, params + outputs, body, attrs=attrs,
                     source=(src.file, src.text, src.first_line))
        if outputs:
            _set_out_idx(f, ret)
        return f
    except TileLangError as e:
        raise_clean(e)


def _parse_annotated_in_body(func, missing, name):
    """`@T.prim_func def k(A, B): A: T.Tensor(...); C = T.empty(...); ...; return C`: the
    parameters take their in-body annotations; returned T.empty outputs become parameters
    listed in the `tilelang_out_idx` attribute (negative indices, as published)."""
    from tilelang.frontend.annotated import annotated_names, trace_annotated
    known = annotated_names(func)
    for pname in missing:
        if pname not in known:
            raise TileLangError(f"parameter `{pname}` of kernel `{func.__name__}` has no annotation",
                                hint="annotate it, e.g. `A: T.Tensor((M, K), 'float16')`, in the signature "
                                     "or as the body's first statements", span=None)
    f, out_idx, _ = trace_annotated(func, {}, annotated=known)
    if out_idx:
        f.attrs["tilelang_out_idx"] = [i - len(f.params) for i in out_idx]
    if name:
        f.name = name
    return f


def _set_out_idx(f, ret):
    """The returned T.empty tensors as the `tilelang_out_idx` attribute (negative indices)."""
    rets = ret if isinstance(ret, (tuple, list)) else ([ret] if ret is not None else [])
    idx = []
    for r in rets:
        k = next((i for i, p in enumerate(f.params) if p is r), None)
        if k is None:
            raise TileLangError("a kernel returns only the tensors it created with T.empty")
        idx.append(k - len(f.params))
    if idx:
        f.attrs["tilelang_out_idx"] = idx


def prim_func(func=None, *, private=False, check_well_formed=False):
    if func is None:
        return lambda f: parse(f)
    if isinstance(func, PrimFunc):
        return func
    return parse(func)
