"""CUDA spellings of the explicit memory-access intrinsics (language/memory_ops.py:
include/tl_cuda/ldst.h), the per-thread random generator (language/random.py:
include/tl_cuda/random.h) and programmatic dependent launch (language/pdl.py)."""
from __future__ import annotations

from tilelang.ir.expr import IntImm

# the byte count of the wide forms, an IntImm argument, is a template argument
MEMORY_OPS = {
    "tl.ldg32": "tl::ldg32", "tl.stg32": "tl::stg32", "tl.lds32": "tl::lds32", "tl.sts32": "tl::sts32",
    "tl.ldg": "tl::ldg", "tl.stg": "tl::stg", "tl.lds": "tl::lds", "tl.sts": "tl::sts",
}

_FLOAT_DRAWS = {("float32", "uniform"): "tl::rng_uniform", ("float64", "uniform"): "tl::rng_uniform_double",
                ("float32", "normal"): "tl::rng_normal", ("float64", "normal"): "tl::rng_normal_double"}

RANDOM_OPS = {"tl.rng_init", "tl.rng_rand", "tl.rng_rand_float", "tl.rng_lane", "tl.pdl_trigger", "tl.pdl_sync"}


def device_call(name, args, dtype, p):
    """The C call of intrinsic `name` returning `dtype`; `p` prints expressions."""
    if name in MEMORY_OPS:
        fn = MEMORY_OPS[name]
        if not name.endswith("32"):   # (dst, src, bytes[, pred]): bytes picks the template
            nbytes = args[2]
            assert isinstance(nbytes, IntImm)
            return f"{fn}<{nbytes.value}>({', '.join(p(a) for a in args[:2] + args[3:])})"
        return f"{fn}({', '.join(p(a) for a in args)})"
    if name == "tl.rng_init":
        return f"tl::rng_init({p(args[0])}, {', '.join(f'(unsigned long long)({p(a)})' for a in args[1:])})"
    if name == "tl.rng_rand":
        return f"tl::rng_rand({p(args[0])})"
    if name == "tl.rng_rand_float":
        return f"{_FLOAT_DRAWS[(dtype.name, args[1].value)]}({p(args[0])})"
    if name == "tl.rng_lane":
        return "((int)threadIdx.x)"
    if name == "tl.pdl_trigger":
        return "tl::pdl_trigger()"
    if name == "tl.pdl_sync":
        return "tl::pdl_sync()"
    raise KeyError(name)
