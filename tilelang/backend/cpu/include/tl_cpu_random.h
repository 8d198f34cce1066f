// T.rng_* on the CPU: the Philox4x32-10 generator shared with the CUDA backend
// (backend/c/include/tl_philox.h, on the include path), so both draw the same streams.
#pragma once
#include "tl_philox.h"
#include "tl_rng_families.h"   // XORWOW and MRG32k3a
