// Scalar helpers shared by all generated kernels: types, integer floor division,
// min/max and casts that work for half/bfloat16/fp8 too (through float).
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_fp4.h>

#define TL_DEVICE __device__ __forceinline__

// the 16-bit float types by the names kernels use for one lane of a vector (lanes.py)
typedef half half_t;
typedef __nv_bfloat16 bfloat16_t;

namespace tl {

typedef __nv_bfloat16 bfloat16_t;
// a vector value (T.alloc_var(T.float16x2), T.float16x2(a, b)): N lanes of T
template <class T, int N> struct vec {
  T v[N];
  vec() = default;
  template <class U> __device__ explicit vec(U x) {   // every lane x (a zero-initialized var)
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = T(x);
  }
  template <class... U> __device__ vec(T a, T b, U... rest) : v{a, b, T(rest)...} {}
};

// Python semantics: // and % round toward negative infinity.
template <class T> TL_DEVICE T floordiv(T a, T b) {
  T q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <class T> TL_DEVICE T floormod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
TL_DEVICE float floordiv(float a, float b) { return floorf(a / b); }
TL_DEVICE double floordiv(double a, double b) { return floor(a / b); }
TL_DEVICE float floormod(float a, float b) { return a - floorf(a / b) * b; }
TL_DEVICE double floormod(double a, double b) { return a - floor(a / b) * b; }

// The value a tensor core reads from a 32-bit float operand of a TF32 mma/wgmma: its top
// 19 bits (sign, exponent, 10 mantissa bits); the low 13 mantissa bits are dropped
// (rounding toward zero). T.gemm on float32/tfloat32 operands multiplies these values
// whichever way it runs (the SIMT loop too; the CPU reference's tl::gemm does the same).
TL_DEVICE float tf32_trunc(float x) { return __uint_as_float(__float_as_uint(x) & 0xFFFFE000u); }

template <class T> TL_DEVICE T max(T a, T b) { return a > b ? a : b; }
template <class T> TL_DEVICE T min(T a, T b) { return a < b ? a : b; }
// fmaxf/fminf propagate the non-NaN operand like torch.maximum does not; keep a > b
// semantics for ints, use the hardware ops for floats.
// 32-bit ints: compare-and-select in PTX. ptxas (CUDA 13.0, sm_90a) fuses chains of max.s32/
// min.s32 into 3-input VIMNMX3 and drops a negated operand's sign (max(a, -x) chains and
// max(x, -x) absmax gave wrong results on the H200; found by tilelang/testing/fuzz). From
// setp/selp it forms the same VIMNMX3 with the negations kept.
#define TL_I32_MINMAX(T, S)                                                                   \
  template <> TL_DEVICE T max(T a, T b) {                                                    \
    T r;                                                                                     \
    asm("{.reg .pred p; setp.lt." S " p, %1, %2; selp.b32 %0, %2, %1, p;}" : "=r"(r) : "r"(a), "r"(b)); \
    return r;                                                                                \
  }                                                                                          \
  template <> TL_DEVICE T min(T a, T b) {                                                    \
    T r;                                                                                     \
    asm("{.reg .pred p; setp.gt." S " p, %1, %2; selp.b32 %0, %2, %1, p;}" : "=r"(r) : "r"(a), "r"(b)); \
    return r;                                                                                \
  }
TL_I32_MINMAX(int, "s32")
TL_I32_MINMAX(unsigned int, "u32")
#undef TL_I32_MINMAX
template <> TL_DEVICE float max(float a, float b) { return fmaxf(a, b); }
template <> TL_DEVICE float min(float a, float b) { return fminf(a, b); }
template <> TL_DEVICE half max(half a, half b) { return __hmax(a, b); }
template <> TL_DEVICE half min(half a, half b) { return __hmin(a, b); }
template <> TL_DEVICE bfloat16_t max(bfloat16_t a, bfloat16_t b) { return __hmax(a, b); }
template <> TL_DEVICE bfloat16_t min(bfloat16_t a, bfloat16_t b) { return __hmin(a, b); }
// 8-bit floats have no comparison operators: through float
#define TL_FP8_MINMAX(T)                                                                     \
  template <> TL_DEVICE T max(T a, T b) { return T(fmaxf(float(a), float(b))); }         \
  template <> TL_DEVICE T min(T a, T b) { return T(fminf(float(a), float(b))); }
TL_FP8_MINMAX(__nv_fp8_e4m3)
TL_FP8_MINMAX(__nv_fp8_e5m2)
#undef TL_FP8_MINMAX

// NaN-propagating forms (T.reduce_max(..., nan_propagate=True)): a NaN operand wins
template <class T> TL_DEVICE T max_nan(T a, T b) { return (a != a) ? a : (b != b) ? b : tl::max(a, b); }
template <class T> TL_DEVICE T min_nan(T a, T b) { return (a != a) ? a : (b != b) ? b : tl::min(a, b); }
template <> TL_DEVICE half max_nan(half a, half b) { return __hmax_nan(a, b); }
template <> TL_DEVICE half min_nan(half a, half b) { return __hmin_nan(a, b); }
template <> TL_DEVICE bfloat16_t max_nan(bfloat16_t a, bfloat16_t b) { return __hmax_nan(a, b); }
template <> TL_DEVICE bfloat16_t min_nan(bfloat16_t a, bfloat16_t b) { return __hmin_nan(a, b); }
#define TL_FP8_MINMAX_NAN(T)                                                                           \
  template <> TL_DEVICE T max_nan(T a, T b) { return T(tl::max_nan(float(a), float(b))); }         \
  template <> TL_DEVICE T min_nan(T a, T b) { return T(tl::min_nan(float(a), float(b))); }
TL_FP8_MINMAX_NAN(__nv_fp8_e4m3)
TL_FP8_MINMAX_NAN(__nv_fp8_e5m2)
#undef TL_FP8_MINMAX_NAN

template <class To, class From> TL_DEVICE To bitcast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bitcast between types of different sizes");
  union { From f; To t; } u;
  u.f = x;
  return u.t;
}

// two 16-bit values to consecutive elements as one 32-bit store (`p` 4-byte aligned)
TL_DEVICE void store_pair(half* p, half a, half b) { *reinterpret_cast<half2*>(p) = __halves2half2(a, b); }
TL_DEVICE void store_pair(bfloat16_t* p, bfloat16_t a, bfloat16_t b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __halves2bfloat162(a, b);
}
// ... converted from two floats with one packing conversion
TL_DEVICE void store_pair(half* p, float a, float b) { *reinterpret_cast<half2*>(p) = __floats2half2_rn(a, b); }
TL_DEVICE void store_pair(bfloat16_t* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}
template <class T> TL_DEVICE void store_pair(T* p, T a, T b) {
  static_assert(sizeof(T) == 2, "store_pair: 16-bit elements");
  unsigned short lo, hi;
  memcpy(&lo, &a, 2);
  memcpy(&hi, &b, 2);
  *reinterpret_cast<unsigned*>(p) = (unsigned)lo | ((unsigned)hi << 16);
}

// the 16 bits of two fp8 elements (from two floats: one packing conversion, saturating
// like the element constructors)
TL_DEVICE unsigned fp8_pair_bits(__nv_fp8_e4m3*, float a, float b) {
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
}
TL_DEVICE unsigned fp8_pair_bits(__nv_fp8_e5m2*, float a, float b) {
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E5M2);
}
template <class T> TL_DEVICE unsigned fp8_pair_bits(T*, T a, T b) {
  static_assert(sizeof(T) == 1, "fp8_pair_bits: 1-byte elements");
  unsigned char lo, hi;
  memcpy(&lo, &a, 1);
  memcpy(&hi, &b, 1);
  return (unsigned)lo | ((unsigned)hi << 8);
}
// Four consecutive fp8 columns of an accumulator row as one 32-bit word. In the m16n8 C
// pattern registers r .. r + 3 hold (R, c), (R, c + 1), (R + 8, c), (R + 8, c + 1), lanes
// 2t and 2t + 1 neighbouring column pairs: one shuffle within the lane pair leaves the even
// lane row R's columns c .. c + 3 and the odd lane row R + 8's, columns c - 2 .. c + 1.
// Every lane of the warp must call it.
template <class T, class V> TL_DEVICE unsigned fp8_quad_word(V v0, V v1, V v2, V v3, int odd) {
  const unsigned lo = fp8_pair_bits((T*)nullptr, v0, v1), hi = fp8_pair_bits((T*)nullptr, v2, v3);
  const unsigned got = __shfl_xor_sync(0xffffffffu, odd ? lo : hi, 1);
  return odd ? (got | (hi << 16)) : (lo | (got << 16));
}

TL_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + __expf(-x)); }
TL_DEVICE double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

TL_DEVICE float inf_f32() { return __int_as_float(0x7f800000); }
// an fp8 e5m2 value from its bits (T.infinity: the conversion from float saturates)
TL_DEVICE __nv_fp8_e5m2 fp8_e5m2_from_bits(unsigned char b) {
  __nv_fp8_e5m2 r;
  r.__x = b;
  return r;
}
TL_DEVICE float nan_f32() { return __int_as_float(0x7fffffff); }

// T.dp4a: *c += a[0]*b[0] + ... + a[3]*b[3] over int8 (one IDP4A). Byte loads: the
// operands need no alignment; the compiler merges them when they are aligned registers.
TL_DEVICE int pack_s8x4(const signed char* p) {
  return (int)((unsigned)(unsigned char)p[0] | ((unsigned)(unsigned char)p[1] << 8) |
               ((unsigned)(unsigned char)p[2] << 16) | ((unsigned)(unsigned char)p[3] << 24));
}
TL_DEVICE void dp4a(const signed char* a, const signed char* b, int* c) {
  *c = __dp4a(pack_s8x4(a), pack_s8x4(b), *c);
}

// Linear thread index within the block and the block's thread count.
TL_DEVICE int thread_linear() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

// named barriers (ids 1-15; 0 is __syncthreads): `count` threads, a multiple of 32,
// arrive; sync waits for the phase to complete, arrive does not
TL_DEVICE void named_barrier_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
TL_DEVICE void named_barrier_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
// T.sync_threads(id[, count]) under the published name: every thread of the block,
// or `count` of them, meet at named barrier `id`
TL_DEVICE void __sync_thread_partial(int id) {
  asm volatile("bar.sync %0;\n" ::"r"(id) : "memory");
}
TL_DEVICE void __sync_thread_partial(int id, int count) { named_barrier_sync(id, count); }

}  // namespace tl
