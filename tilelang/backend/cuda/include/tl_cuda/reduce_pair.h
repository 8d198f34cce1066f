// Two reduction partials in one register pair: 16-bit max/min combine both lanes in one
// instruction (HMNMX2), 16-bit sums accumulate as float pairs (T.reduce_sum of 16-bit
// floats accumulates in float32: two independent chains, folded at the end).
#pragma once
#include "common.h"

namespace tl {

TL_DEVICE half2 pack2(half a, half b) { return __halves2half2(a, b); }
TL_DEVICE __nv_bfloat162 pack2(bfloat16_t a, bfloat16_t b) { return __halves2bfloat162(a, b); }
TL_DEVICE float2 pack2(float a, float b) { return make_float2(a, b); }

TL_DEVICE float2 to_float2(half2 v) { return __half22float2(v); }
TL_DEVICE float2 to_float2(__nv_bfloat162 v) { return __bfloat1622float2(v); }

TL_DEVICE float2 add2(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
TL_DEVICE half2 add2(half2 a, half2 b) { return __hadd2(a, b); }
TL_DEVICE __nv_bfloat162 add2(__nv_bfloat162 a, __nv_bfloat162 b) { return __hadd2(a, b); }

// a NaN lane yields the other operand's lane (as __hmax); the _nan forms return the NaN
TL_DEVICE half2 max2(half2 a, half2 b) { return __hmax2(a, b); }
TL_DEVICE half2 min2(half2 a, half2 b) { return __hmin2(a, b); }
TL_DEVICE half2 max2_nan(half2 a, half2 b) { return __hmax2_nan(a, b); }
TL_DEVICE half2 min2_nan(half2 a, half2 b) { return __hmin2_nan(a, b); }
TL_DEVICE __nv_bfloat162 max2(__nv_bfloat162 a, __nv_bfloat162 b) { return __hmax2(a, b); }
TL_DEVICE __nv_bfloat162 min2(__nv_bfloat162 a, __nv_bfloat162 b) { return __hmin2(a, b); }
TL_DEVICE __nv_bfloat162 max2_nan(__nv_bfloat162 a, __nv_bfloat162 b) { return __hmax2_nan(a, b); }
TL_DEVICE __nv_bfloat162 min2_nan(__nv_bfloat162 a, __nv_bfloat162 b) { return __hmin2_nan(a, b); }

TL_DEVICE half2 abs2(half2 v) { return __habs2(v); }
TL_DEVICE __nv_bfloat162 abs2(__nv_bfloat162 v) { return __habs2(v); }
TL_DEVICE float2 abs2(float2 v) { return make_float2(fabsf(v.x), fabsf(v.y)); }

}  // namespace tl
