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

// e8m0 (scale factors, 2^(v - 127)) two at a time, with the scalar casts' rounding:
// toward +inf and saturating (CUDA's __nv_fp8_e8m0(float)); doubles first become floats,
// as the scalar cast does. cvt...ue8m0x2 on sm_100+, exact integer code elsewhere.
TL_DEVICE __nv_fp8x2_storage_t __tl_cvt_float2_to_e8m0x2(float2 x) {
  return __nv_cvt_float2_to_e8m0x2(x, __NV_SATFINITE, cudaRoundPosInf);
}

TL_DEVICE __nv_fp8x2_storage_t __tl_cvt_double2_to_e8m0x2(double2 x) {
  return __tl_cvt_float2_to_e8m0x2(make_float2((float)x.x, (float)x.y));
}

TL_DEVICE __nv_fp8x2_storage_t __tl_cvt_bfloat162_to_e8m0x2(__nv_bfloat162 x) {
  return __nv_cvt_bfloat162raw_to_e8m0x2(__nv_bfloat162_raw(x), __NV_SATFINITE, cudaRoundPosInf);
}

TL_DEVICE __nv_bfloat162 __tl_cvt_e8m0x2_to_bfloat162(__nv_fp8x2_storage_t x) {
  return __nv_bfloat162(__nv_cvt_e8m0x2_to_bf162raw(x));
}
