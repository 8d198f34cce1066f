// T.rng_init / T.rng_rand / T.rng_rand_float: the Philox4x32-10 generator shared with
// the CPU backend (backend/c/include/tl_philox.h, on the include path), so both draw
// the same streams.
#pragma once
#include "common.h"
#include "tl_philox.h"
#include "tl_rng_families.h"   // XORWOW and MRG32k3a
