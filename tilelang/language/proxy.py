"""Parameter annotations (`T.Tensor`, `T.Buffer`, `T.StridedTensor`, `T.dyn`) and
the eager-mode bindings (`T.const`, `T.dynamic`, `T.empty`)."""
from __future__ import annotations

from tilelang.frontend import builder as B
from tilelang.ir.buffer import Buffer
from tilelang.ir.dtypes import DataType, as_dtype, int32
from tilelang.ir.expr import Var, PrimExpr, IntImm, const_int_value
from tilelang.ir.errors import ArgumentError, TileLangError, DTypeMismatchError, ShapeMismatchError


class TensorType:
    """`T.Tensor(shape, dtype)`: the type of a global tensor parameter."""

    def __init__(self, shape, dtype="float32", strides=None, scope="global"):
        if isinstance(shape, (int, PrimExpr)):
            shape = (shape,)
        self.shape = tuple(shape)
        self.dtype = as_dtype(dtype)
        self.strides = tuple(strides) if strides is not None else None
        self.scope = scope

    def make_buffer(self, name):
        return Buffer(name, self.shape, self.dtype, self.scope, strides=self.strides)

    def __repr__(self):
        return f"T.Tensor({self.shape}, {self.dtype})"


class _TensorProxy:
    """Callable and subscriptable: `T.Tensor((M, N), dtype)` or `T.Tensor[[M, N], dtype]`."""

    def __call__(self, shape, dtype="float32", data=None, strides=None, elem_offset=None, scope="global",
                 **_):
        return TensorType(shape, dtype, strides, scope)

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        shape = key[0]
        dtype = key[1] if len(key) > 1 else "float32"
        return TensorType(shape if isinstance(shape, (list, tuple)) else (shape,), dtype)


class _StridedTensorProxy:
    def __call__(self, shape, strides, dtype="float32", **_):
        return TensorType(shape, dtype, strides)

    def __getitem__(self, key):
        shape, strides = key[0], key[1]
        dtype = key[2] if len(key) > 2 else "float32"
        return TensorType(shape, dtype, strides)


Tensor = _TensorProxy()
Buffer_ = _TensorProxy()
StridedTensor = _StridedTensorProxy()


class _DynProxy:
    """`T.dyn['K']`: a named dynamic dimension."""

    def __getitem__(self, name):
        if isinstance(name, tuple):
            return tuple(dynamic(n) for n in name)
        return dynamic(name)

    def __call__(self, name, dtype="int32"):
        return dynamic(name, dtype)


dyn = _DynProxy()


def dynamic(name: str, dtype="int32"):
    """A symbolic (runtime) dimension, bound from the arguments' shapes at call time.
    `T.dynamic("M, N")` returns several."""
    names = [n for n in name.replace(",", " ").split()]
    vs = [Var(n, as_dtype(dtype)) for n in names]
    return vs[0] if len(vs) == 1 else tuple(vs)


symbolic = dynamic


class ConstVar(Var):
    """`T.const("M")` in an eager kernel: a compile-time size taken from the first
    tensor annotation that uses it."""
    __slots__ = ("const_value",)

    def __init__(self, name):
        super().__init__(name, int32)
        self.const_value = None


def const(names: str, dtype="int32"):
    parts = [n for n in names.replace(",", " ").split()]
    vs = [ConstVar(n) for n in parts]
    b = B.current()
    presets = getattr(b, "const_presets", None) or {}
    for v in vs:
        if v.name in presets:
            v.const_value = int(presets[v.name])
    return vs[0] if len(vs) == 1 else tuple(vs)


class TensorArg:
    """An actual tensor passed to an eager kernel, before its annotation binds it."""

    def __init__(self, name, value):
        self.name = name
        self.value = value
        self.shape = tuple(int(s) for s in value.shape)
        from tilelang.jit.arrays import array_dtype, array_strides
        self.dtype = array_dtype(value)
        self.strides = array_strides(value)


def _unify(dim, actual, what):
    if isinstance(dim, ConstVar):
        if dim.const_value is None:
            dim.const_value = actual
            return
        dim_v = dim.const_value
    else:
        dim_v = const_int_value(dim) if isinstance(dim, (int, PrimExpr)) else None
        if dim_v is None and isinstance(dim, Var):
            return  # dynamic: bound at run time
    if dim_v is not None and dim_v != actual:
        raise ShapeMismatchError(f"{what}: expected {dim_v}, got {actual}")


def bind_tensor(name, arg: TensorArg, ty: TensorType) -> Buffer:
    b = B.current()
    if len(ty.shape) != len(arg.shape):
        raise ShapeMismatchError(
            f"argument `{name}` has {len(arg.shape)} dimensions {list(arg.shape)}, the annotation "
            f"declares {len(ty.shape)}", hint="pass a tensor of the annotated rank")
    for i, (d, a) in enumerate(zip(ty.shape, arg.shape)):
        _unify(d, a, f"dimension {i} of argument `{name}` (shape {list(arg.shape)})")
    if ty.strides is not None:
        for i, (d, a) in enumerate(zip(ty.strides, arg.strides)):
            _unify(d, a, f"stride {i} of argument `{name}`")
    if arg.dtype != ty.dtype:
        raise DTypeMismatchError(f"argument `{name}` has dtype {arg.dtype}, the annotation declares {ty.dtype}",
                                 hint=f"pass a {ty.dtype} tensor or change the annotation")
    buf = ty.make_buffer(name)
    if b is not None:
        b.tensor_params[name] = buf
    return buf


def annotate_binding(name, old, annotation, value, has_value):
    """`name: annotation [= value]` inside a kernel body."""
    from tilelang.ir.dtypes import DataType
    if isinstance(annotation, TensorType):
        if isinstance(old, TensorArg):
            return bind_tensor(name, old, annotation)
        if isinstance(old, Buffer):
            return old
        buf = annotation.make_buffer(name)
        b = B.current()
        if b is not None and hasattr(b, "tensor_params"):
            b.tensor_params[name] = buf
        return buf
    is_py_type = any(annotation is t for t in (int, float, bool))  # not `in`: T.int32 == int
    if isinstance(annotation, DataType) or is_py_type:
        if has_value:
            from tilelang.language.alloc import alloc_var
            if is_py_type:
                return value
            return alloc_var(annotation, init=value)
        return old
    return value if has_value else old


def empty(shape, dtype="float32"):
    """`T.empty(shape, dtype)` in an eager kernel: an output tensor, allocated at call
    time and returned."""
    b = B.require("T.empty")
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    buf = Buffer(f"out{len(b.extra_params)}", shape, dtype, "global")
    b.extra_params.append(buf)
    return buf


class _PtrType:
    def __call__(self, *a, **k):
        return self


ptr = _PtrType()
