// Two-lane conversions CUDA has no single intrinsic for (fp8 <-> float / half go through
// the hardware's fp8x2 <-> half2 conversion). Named as the published package names them.
#pragma once
#include "common.h"

TL_DEVICE float2 __tl_cvt_fp8x2_to_float2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t kind) {
  return __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(x, kind)));
}

TL_DEVICE half2 __tl_cvt_fp8x2_to_half2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t kind) {
  return __half2(__nv_cvt_fp8x2_to_halfraw2(x, kind));
}

TL_DEVICE __nv_fp8x2_storage_t __tl_cvt_half2_to_fp8x2(half2 x, __nv_fp8_interpretation_t kind) {
  return __nv_cvt_halfraw2_to_fp8x2(__half2_raw(x), __NV_SATFINITE, kind);
}
