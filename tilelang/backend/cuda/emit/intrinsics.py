"""CUDA spellings of the explicit memory-access intrinsics (language/memory_ops.py:
include/tl_cuda/ldst.h), the per-thread random generator (language/random.py:
include/tl_cuda/random.h)."""
from __future__ import annotations

from tilelang.ir.expr import IntImm
from tilelang.backend.c.random import RNG_CALLS, rng_call

# direction and memory of each op; the width is in the name (include/tl_cuda/ldst.h):
# tl::load_global_32, tl::store_shared_128, ... with `_conditional` when a predicate is given
MEMORY_OPS = {
    "tl.ldg32": "load_global", "tl.stg32": "store_global", "tl.lds32": "load_shared", "tl.sts32": "store_shared",
    "tl.ldg": "load_global", "tl.stg": "store_global", "tl.lds": "load_shared", "tl.sts": "store_shared",
}

_FLOAT_DRAWS = {("float32", "uniform"): "rng_uniform", ("float64", "uniform"): "rng_uniform_double",
                ("float32", "normal"): "rng_normal", ("float64", "normal"): "rng_normal_double"}

RANDOM_OPS = {"tl.ldg_value", "tl.rng_init", "tl.rng_rand", "tl.rng_rand_float", "tl.rng_lane"}


def device_call(name, args, dtype, p):
    """The C call of intrinsic `name` returning `dtype`; `p` prints expressions."""
    if name in MEMORY_OPS:
        if name.endswith("32"):   # (address[, value][, pred])
            bits, rest = 32, list(args)
        else:                     # (dst, src, bytes[, pred])
            assert isinstance(args[2], IntImm)
            bits, rest = args[2].value * 8, list(args[:2]) + list(args[3:])
        fn = f"tl::{MEMORY_OPS[name]}_{bits}"
        if MEMORY_OPS[name].endswith("global"):   # the last argument is the predicate
            pred = rest.pop()
            if not (isinstance(pred, IntImm) and pred.value):
                fn += "_conditional"
                rest.append(pred)
        return f"{fn}({', '.join(p(a) for a in rest)})"
    if name == "tl.ldg_value":   # through the read-only data cache
        return f"__ldg(&({p(args[0])}))"
    if name in RNG_CALLS:
        ns, args = rng_call(name, args)   # the generator's functions (backend/c/random.py)
        if name == "tl.rng_init":
            return f"{ns}rng_init({p(args[0])}, {', '.join(f'(unsigned long long)({p(a)})' for a in args[1:])})"
        if name == "tl.rng_rand":
            return f"{ns}rng_rand({p(args[0])})"
        return f"{ns}{_FLOAT_DRAWS[(dtype.name, args[1].value)]}({p(args[0])})"
    if name == "tl.rng_lane":
        return "((int)threadIdx.x)"
    raise KeyError(name)
