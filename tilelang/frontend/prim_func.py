"""`@T.prim_func`: trace a kernel function into a `PrimFunc`."""
from __future__ import annotations

import inspect

from tilelang.frontend import builder as B
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
        params = []
        for pname in inspect.signature(func).parameters:
            if pname not in anns:
                raise TileLangError(f"parameter `{pname}` of kernel `{func.__name__}` has no annotation",
                                    hint="annotate it, e.g. `A: T.Tensor((M, K), 'float16')`",
                                    span=None)
            params.append(make_param(pname, anns[pname]))
        with B.building() as b:
            run_traced(fn, *params)
            body = b.body()
        src = fn.__tl_source__
        return PrimFunc(name or func.__name__, params, body, source=(src.file, src.text, src.first_line))
    except TileLangError as e:
        raise_clean(e)


def prim_func(func=None, *, private=False, check_well_formed=False):
    if func is None:
        return lambda f: parse(f)
    if isinstance(func, PrimFunc):
        return func
    return parse(func)
