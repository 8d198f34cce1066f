"""Data types: one `DataType` object per element type, normalised from strings,
numpy/ml_dtypes dtypes and torch dtypes."""
from __future__ import annotations

import numpy as np

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - ml_dtypes is a core dependency
    ml_dtypes = None

# canonical name -> (kind, bits)
_TABLE = {
    "bool": ("bool", 8),
    "int8": ("int", 8), "int16": ("int", 16), "int32": ("int", 32), "int64": ("int", 64),
    "uint8": ("uint", 8), "uint16": ("uint", 16), "uint32": ("uint", 32), "uint64": ("uint", 64),
    "int4": ("int", 4), "uint4": ("uint", 4),
    "float16": ("float", 16), "bfloat16": ("bfloat", 16), "float32": ("float", 32),
    "float64": ("float", 64),
    "float8_e4m3fn": ("float8", 8), "float8_e5m2": ("float8", 8),
    "float8_e4m3fnuz": ("float8", 8), "float8_e5m2fnuz": ("float8", 8),
    "float8_e8m0fnu": ("float8", 8),   # an unsigned power of two (MX block scales): 2^(bits - 127)
    "float4_e2m1fn": ("float4", 4),    # packed two per byte in tensors (not compiled yet: backends reject it)
    # one fp4 value per byte slot of shared memory: the storage of sm_100's TMA unpack load for
    # tcgen05 mixed-precision MMA (a storage tag: no arithmetic, no element access)
    "float4_e2m1_unpacked": ("float4_unpacked", 8),
    "tfloat32": ("float", 32),
    "handle": ("handle", 64),
}

_ALIASES = {
    "float": "float32", "half": "float16", "double": "float64", "fp16": "float16",
    "fp32": "float32", "fp64": "float64", "bf16": "bfloat16", "int": "int32",
    "float8_e4m3": "float8_e4m3fn", "e4m3_float8": "float8_e4m3fn", "float8_e4m3fnuz": "float8_e4m3fnuz",
    "e5m2_float8": "float8_e5m2", "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2",
    "float8_e8m0": "float8_e8m0fnu", "e8m0": "float8_e8m0fnu",
    "float4_e2m1fn_x2": "float4_e2m1fnx2",   # torch's name of two packed fp4 values
    "custom[float4_e2m1_unpacked]8": "float4_e2m1_unpacked",   # TVM's spelling (published str())
    "long": "int64", "uchar": "uint8", "char": "int8", "short": "int16", "uint": "uint32",
    "ulong": "uint64",
}


_variable_namer = None   # the frontend names `x = T.int32()` after `x` through this hook


def set_variable_namer(fn):
    global _variable_namer
    _variable_namer = fn


class DataType(str):
    """An element type. Instances are interned: compare with `==` or `is`.

    A `str` subclass whose value is the canonical name, as the published dtype is:
    user code passes `T.bfloat16` wherever a name is expected (`getattr(torch, dtype)`).

    Calling a dtype, as in `T.float32(0)`, builds a constant (or a cast of an
    expression), matching the published `T.<dtype>(value)` form.
    """

    _interned: dict[str, "DataType"] = {}

    def __new__(cls, name):
        if not isinstance(name, str):  # T.dtype(torch.float16), T.dtype(np.float32), ...
            return as_dtype(name)
        name = _ALIASES.get(name, name)
        obj = cls._interned.get(name)
        if obj is not None:
            return obj
        base, lanes = name, 1
        if name not in _TABLE:   # a vector type: "float32x2", "int8x4", ...
            head, _, n = name.rpartition("x")
            head = _ALIASES.get(head, head)
            if head not in _TABLE or not n.isdigit() or int(n) < 2:
                from tilelang.ir.errors import UnknownDTypeError
                raise UnknownDTypeError(name, list(_TABLE) + list(_ALIASES))
            base, lanes = head, int(n)
            name = f"{head}x{lanes}"
            obj = cls._interned.get(name)
            if obj is not None:
                return obj
        obj = super().__new__(cls, name)
        obj.name = name
        obj.kind, obj.bits = _TABLE[base]
        obj.lanes = lanes
        cls._interned[name] = obj
        return obj

    def __reduce__(self):
        return (DataType, (self.name,))

    # predicates ---------------------------------------------------------
    @property
    def is_float(self) -> bool:
        return self.kind in ("float", "bfloat", "float8", "float4")

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def itemsize(self) -> int:
        """Bytes of one value (all lanes of a vector type)."""
        return max(1, self.bits * self.lanes // 8)

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def element(self) -> "DataType":
        """The scalar type of one lane (the type itself when it is scalar)."""
        return self if self.lanes == 1 else DataType(self.name.rpartition("x")[0])

    def with_lanes(self, lanes: int) -> "DataType":
        return self.element if lanes == 1 else DataType(f"{self.element.name}x{lanes}")

    def __call__(self, value=None, *more):
        from tilelang.ir.expr import cast, const, Var
        if more or (self.lanes > 1 and isinstance(value, (list, tuple))):   # T.float16x2(a, b): one per lane
            from tilelang.ir.expr import make_vector
            return make_vector(self, list(value) if not more else [value, *more])
        if value is None:  # `x = T.int32()`: a fresh scalar variable (a parameter as an annotation)
            return Var((_variable_namer() if _variable_namer else None) or "v", self)
        if isinstance(value, (bool, int, float)):
            return const(value, self)
        return cast(value, self)

    def __repr__(self):
        return self.name

    def __str__(self):
        return self.name

    def __eq__(self, other):
        if isinstance(other, DataType):
            return self is other
        try:
            return self is as_dtype(other)
        except (ValueError, TypeError):
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.name)

    def as_numpy(self):
        return numpy_dtype(self)

    def as_torch(self):
        return torch_dtype(self)


def as_dtype(x) -> DataType:
    """Normalise a dtype given as a string, DataType, numpy or torch dtype."""
    if isinstance(x, DataType):
        return x
    if isinstance(x, str):
        return DataType(x)
    if x is float:
        return DataType("float32")
    if x is int:
        return DataType("int32")
    if x is bool:
        return DataType("bool")
    mod = type(x).__module__
    if mod.startswith("torch"):
        name = str(x).replace("torch.", "")
        return DataType(name)
    try:
        npd = np.dtype(x)
    except TypeError as e:
        raise ValueError(f"cannot interpret {x!r} as a dtype") from e
    return DataType(npd.name)


def numpy_dtype(dt: DataType):
    dt = as_dtype(dt)
    if dt.is_vector:
        raise TypeError(f"the vector type {dt} has no numpy dtype (it is {dt.lanes} x {dt.element})")
    if dt.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                   "float8_e8m0fnu", "int4", "uint4"):
        if ml_dtypes is None:
            raise RuntimeError(f"dtype {dt} needs the ml_dtypes package")
        return np.dtype(getattr(ml_dtypes, dt.name))
    if dt.name == "tfloat32":
        return np.dtype("float32")
    if dt.name == "bool":
        return np.dtype("bool")
    return np.dtype(dt.name)


def torch_dtype(dt: DataType):
    import torch
    dt = as_dtype(dt)
    if dt.name in ("float4_e2m1fn", "float4_e2m1fnx2") and hasattr(torch, "float4_e2m1fn_x2"):
        return torch.float4_e2m1fn_x2   # fp4 values live in torch two to a byte
    if dt.is_vector:
        raise TypeError(f"the vector type {dt} has no torch dtype (it is {dt.lanes} x {dt.element})")
    name = {"tfloat32": "float32"}.get(dt.name, dt.name)
    if not hasattr(torch, name):
        raise TypeError(f"torch has no dtype for {dt}")
    return getattr(torch, name)


def promote(a: DataType, b: DataType) -> DataType:
    """The dtype of a binary operation between two typed operands (the wider wins;
    float beats int; bool is the narrowest)."""
    if a is b:
        return a
    rank = {"bool": 0, "uint": 1, "int": 1, "float8": 2, "bfloat": 3, "float": 3}
    ra, rb = rank.get(a.kind, 1), rank.get(b.kind, 1)
    if ra != rb:
        return a if ra > rb else b
    if a.is_float and b.is_float and a.bits == b.bits:  # float16 vs bfloat16
        return DataType("float32")
    return a if a.bits >= b.bits else b


bool_ = DataType("bool")
int8, int16, int32, int64 = (DataType(n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (DataType(n) for n in ("uint8", "uint16", "uint32", "uint64"))
float16, bfloat16, float32, float64 = (DataType(n) for n in ("float16", "bfloat16", "float32", "float64"))
float8_e4m3fn, float8_e5m2 = DataType("float8_e4m3fn"), DataType("float8_e5m2")


# 4-bit element types travel packed two per byte in an int8/uint8 (or torch
# float4_e2m1fn_x2) tensor whose last dimension holds half the elements
STORAGE_DTYPES = ("int8", "uint8", "float4_e2m1fnx2")


def pack_factor(dtype) -> int:
    """Elements per byte of a tensor of `dtype` as it arrives (2 for 4-bit types)."""
    return 2 if dtype.bits < 8 and dtype.lanes == 1 else 1


def logical_shape(dtype, shape, strides=()):
    """(shape, strides) of a tensor of packed storage in elements of `dtype`: the last
    dimension and the other strides count `pack_factor` elements per byte."""
    k = pack_factor(dtype)
    if k == 1 or not shape:
        return tuple(shape), tuple(strides)
    shape = tuple(shape[:-1]) + (shape[-1] * k,)
    strides = tuple(s * k for s in strides[:-1]) + tuple(strides[-1:]) if strides else tuple(strides)
    return shape, strides
