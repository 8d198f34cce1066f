"""Parameter annotations (`T.Tensor`, `T.Buffer`, `T.StridedTensor`, `T.dyn`) and
the eager-mode bindings (`T.const`, `T.dynamic`, `T.empty`)."""
from __future__ import annotations

from tilelang.ir import builder as B
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
        if self.dtype.name == "handle":   # a table of addresses
            self.dtype = as_dtype("int64")
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
        if data is not None:   # `T.Tensor(shape, dtype, A.data)`: a view of A's elements
            from tilelang.ir.buffer import BufferData
            from tilelang.language.alloc import _alias
            if not isinstance(data, BufferData):
                raise TileLangError(f"T.Tensor(..., data): data must be `buffer.data`, got {type(data).__name__}")
            return _alias(data.buffer, shape, dtype, "T.Tensor(..., data)")
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


class _ScopedTensorProxy(_TensorProxy):
    """`T.SharedBuffer` / `T.LocalBuffer` / `T.FragmentBuffer`: `T.Tensor` in another
    scope, to annotate the buffer parameters of macros and helpers."""

    def __init__(self, scope):
        self.scope = scope

    def __call__(self, shape, dtype="float32", data=None, strides=None, elem_offset=None, scope=None, **_):
        return TensorType(shape, dtype, strides, scope or self.scope)

    def __getitem__(self, key):
        ty = super().__getitem__(key)
        ty.scope = self.scope
        return ty


Tensor = _TensorProxy()
Buffer_ = _TensorProxy()
StridedTensor = _StridedTensorProxy()
SharedBuffer = _ScopedTensorProxy("shared")
LocalBuffer = _ScopedTensorProxy("local")
FragmentBuffer = _ScopedTensorProxy("local.fragment")


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
    """An actual tensor passed to an eager kernel, before its annotation binds it (or a
    `T.Tensor(shape, dtype)` standing for one: `kernel.get_tir(T.Tensor((128, 128)), ...)`)."""

    def __init__(self, name, value):
        self.name = name
        self.value = value
        if isinstance(value, TensorType):
            self.shape, self.dtype = tuple(value.shape), value.dtype
            self.strides = tuple(value.strides) if value.strides is not None else _row_major(self.shape)
            return
        self.shape = tuple(int(s) for s in value.shape)
        from tilelang.arrays import array_dtype, array_strides
        self.dtype = array_dtype(value)
        self.strides = array_strides(value)


def _row_major(shape):
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc = acc * d
    return tuple(reversed(out))


class _Logical:
    """A packed tensor argument seen in its elements (bind_tensor)."""

    def __init__(self, arg, shape, strides, dtype):
        self.name, self.value = arg.name, arg.value
        self.shape, self.strides, self.dtype = shape, strides, dtype


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
    from tilelang.ir.dtypes import STORAGE_DTYPES, pack_factor, logical_shape
    b = B.current()
    if pack_factor(ty.dtype) > 1 and arg.dtype.name in STORAGE_DTYPES:   # packed 4-bit elements
        arg = _Logical(arg, *logical_shape(ty.dtype, arg.shape, arg.strides), ty.dtype)
    if len(ty.shape) != len(arg.shape):
        raise ShapeMismatchError(
            f"argument `{name}` has {len(arg.shape)} dimensions {list(arg.shape)}, the annotation "
            f"declares {len(ty.shape)}", hint="pass a tensor of the annotated rank")
    for i, (d, a) in enumerate(zip(ty.shape, arg.shape)):
        _unify(d, a, f"dimension {i} of argument `{name}` (shape {list(arg.shape)})")
    if ty.strides is not None:
        for i, (d, a) in enumerate(zip(ty.strides, arg.strides)):
            _unify(d, a, f"stride {i} of argument `{name}`")
    if arg.dtype != ty.dtype and not (arg.dtype.name == "float32" and ty.dtype.name == "tfloat32"):
        # (tfloat32 data is stored as float32: torch has no tf32 tensors)
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


def empty(shape, *more, dtype="float32"):
    """`T.empty(shape, dtype)` (or `T.empty(M, N, dtype=...)`) in an eager kernel: an
    output tensor, allocated at call time and returned."""
    b = B.require("T.empty")
    if more and isinstance(shape, (tuple, list)):   # T.empty(shape, dtype)
        dtype = more[0]
    elif more:   # T.empty(M, N[, dtype]) -- dimensions as arguments, a trailing dtype too
        dims = [shape] + list(more)
        if dims and not isinstance(dims[-1], (int, PrimExpr)):
            dtype = dims.pop()
        shape = tuple(dims)
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    buf = Buffer(f"out{len(b.extra_params)}", shape, dtype, "global")
    b.extra_params.append(buf)
    return buf


def make_tensor(ptr, shape, dtype="float32", strides=None):
    """`T.make_tensor(A, shape, dtype)`: a tensor of `shape` and `dtype` over the memory
    of the buffer `A` (its first element; the bytes are reinterpreted), or at the address
    `A` (a `T.ptr` parameter, or an element of a table of addresses)."""
    from tilelang.ir import stmt as S
    b = B.require("T.make_tensor")
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    if isinstance(ptr, Buffer) and ptr.is_var():
        ptr = ptr.load()
    if isinstance(ptr, PrimExpr):
        if not (ptr.dtype.name == "handle" or ptr.dtype.is_int and ptr.dtype.bits == 64):
            raise TileLangError(f"T.make_tensor takes a buffer or a 64-bit address (T.ptr), got a {ptr.dtype} value")
        names = B.source_names("assign")
        t = Buffer(names[0] if names else "tensor", tuple(shape), as_dtype(dtype), "global", strides=strides)
        t.data_ptr = ptr
        b.emit(S.DeclBuffer(t))
        return t
    if not isinstance(ptr, Buffer):
        raise TileLangError(f"T.make_tensor takes a buffer or an address (T.ptr), got {type(ptr).__name__}")
    dtype = as_dtype(dtype)
    need, have = const_int_value(_bits(shape, dtype)), const_int_value(_bits(ptr.shape, ptr.dtype))
    if need is not None and have is not None and need > have:
        raise ShapeMismatchError(f"T.make_tensor: the view needs {need // 8} bytes, `{ptr.name}` has {have // 8}")
    names = B.source_names("assign")
    view = Buffer(names[0] if names else ptr.name + "_tensor", tuple(shape), dtype, ptr.scope, strides=strides)
    view.alias_of = ptr
    b.emit(S.DeclBuffer(view))
    return view


def _bits(shape, dtype):
    n = dtype.bits
    for d in shape:
        n = n * d
    return n


def make_tensor_from_addr(addr, shape, dtype="float32", strides=None, storage_scope="global"):
    raise TileLangError("T.make_tensor_from_addr: tensors at raw addresses are not supported",
                        hint="pass the tensor as a kernel parameter, or view one with T.make_tensor(A, shape, dtype)")


def match_buffer(param, shape, dtype="float32", strides=None, **_):
    """TVM's `A = T.match_buffer(A_ptr, shape, dtype)` for a `T.handle` parameter: the
    parameter becomes that tensor (checked against each call's argument like any other)."""
    b = B.require("T.match_buffer")
    if not isinstance(param, Var) or param.dtype.name != "handle":
        raise TileLangError(f"T.match_buffer takes a T.handle parameter, got {param!r}")
    buf = TensorType(shape, dtype, strides).make_buffer(param.name)
    b.matched_params[id(param)] = buf
    return buf


# `T.ptr`: a device address (a scalar parameter of this type takes a tensor, whose data
# pointer is passed, or an int); `T.Tensor([n], T.ptr)` is a table of addresses (int64)
ptr = DataType("handle")
handle = ptr   # TVM's spelling; a T.handle parameter given to T.match_buffer is a tensor
