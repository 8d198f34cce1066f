"""The C++ namespace of each T.rng_init generator's functions (include/tl_philox.h,
include/tl_rng_families.h), shared by the CPU and CUDA printers: every tl.rng_* call
carries its generator's cuRAND state name as its last argument (language/random.py)."""
from __future__ import annotations

RNG_NAMESPACES = {"curandStatePhilox4_32_10_t": "tl::", "curandStateXORWOW_t": "tl::xorwow::",
                  "curandStateMRG32k3a_t": "tl::mrg32k3a::"}
RNG_CALLS = ("tl.rng_init", "tl.rng_rand", "tl.rng_rand_float")


def rng_call(name, args):
    """(C++ namespace, the arguments without the generator) of a tl.rng_* call."""
    return RNG_NAMESPACES[args[-1].value], list(args[:-1])
