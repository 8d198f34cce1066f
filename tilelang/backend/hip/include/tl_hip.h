// Device helpers of the HIP backend (CDNA: wavefront 64, MFMA, LDS).
// Low-precision floats compute in float; bfloat16 and the FNUZ fp8 formats of gfx940
// are stored as their bits.
#pragma once
#include <hip/hip_runtime.h>
#include <stdint.h>

namespace tl {

typedef _Float16 half_t;
typedef _Float16 halfx4 __attribute__((ext_vector_type(4)));
typedef short shortx4 __attribute__((ext_vector_type(4)));
typedef float floatx4 __attribute__((ext_vector_type(4)));
typedef float floatx16 __attribute__((ext_vector_type(16)));

struct bfloat16_t {
  uint16_t bits;
  __device__ bfloat16_t() = default;
  __device__ explicit bfloat16_t(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) { bits = 0x7fc0; return; }  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);                                  // round to nearest even
    bits = (uint16_t)(u >> 16);
  }
  __device__ operator float() const { return __uint_as_float((uint32_t)bits << 16); }
};

// FNUZ fp8 (gfx940 MFMA operands): no infinities, one NaN (0x80), exponent bias 8 / 16
template <int E, int M, int BIAS>
struct fp8_fnuz {
  uint8_t bits;
  __device__ fp8_fnuz() = default;
  __device__ explicit fp8_fnuz(float f) {
    if (f != f) { bits = 0x80; return; }
    uint8_t sign = f < 0.f ? 0x80 : 0;
    float a = fabsf(f);
    const float maxv = ldexpf(2.f - ldexpf(1.f, -M), (1 << E) - 1 - BIAS);
    if (a > maxv) a = maxv;                                         // saturate
    int e;
    frexpf(a, &e);                                                  // a = m * 2^e, m in [0.5, 1)
    int ex = e - 1 + BIAS;                                          // biased exponent of a
    uint32_t code;
    if (ex <= 0) {                                                  // subnormal
      code = (uint32_t)rintf(ldexpf(a, M - 1 + BIAS));
    } else {
      float mant = ldexpf(a, -(e - 1)) - 1.f;                       // in [0, 1)
      uint32_t m = (uint32_t)rintf(ldexpf(mant, M));
      code = ((uint32_t)ex << M) + m;                               // a carry bumps the exponent
    }
    if (code > 0x7f) code = 0x7f;
    bits = code == 0 ? 0 : (uint8_t)(sign | code);                  // -0 is the NaN code: keep +0
  }
  __device__ operator float() const {
    if (bits == 0x80) return __builtin_nanf("");
    int ex = (bits >> M) & ((1 << E) - 1), m = bits & ((1 << M) - 1);
    float v = ex == 0 ? ldexpf((float)m, 1 - BIAS - M) : ldexpf(1.f + ldexpf((float)m, -M), ex - BIAS);
    return (bits & 0x80) ? -v : v;
  }
};
typedef fp8_fnuz<4, 3, 8> float8_e4m3fnuz_t;
typedef fp8_fnuz<5, 2, 16> float8_e5m2fnuz_t;

// conversions and math: through float for the narrow types ---------------------------
template <typename D, typename S> __device__ inline D cast(S v) { return static_cast<D>(v); }
template <typename T> __device__ inline float f32(T v) { return static_cast<float>(v); }
__device__ inline double f32(double v) { return v; }

#define TL_HIP_UNARY(name, fn)                                                          \
  __device__ inline float name(float x) { return fn##f(x); }                            \
  __device__ inline double name(double x) { return fn(x); }                             \
  template <typename T> __device__ inline T name(T x) { return T(fn##f(f32(x))); }
TL_HIP_UNARY(exp, ::exp) TL_HIP_UNARY(exp2, ::exp2) TL_HIP_UNARY(log, ::log) TL_HIP_UNARY(log2, ::log2)
TL_HIP_UNARY(log10, ::log10) TL_HIP_UNARY(log1p, ::log1p) TL_HIP_UNARY(expm1, ::expm1)
TL_HIP_UNARY(sqrt, ::sqrt) TL_HIP_UNARY(rsqrt, ::rsqrt) TL_HIP_UNARY(sin, ::sin) TL_HIP_UNARY(cos, ::cos)
TL_HIP_UNARY(tan, ::tan) TL_HIP_UNARY(asin, ::asin) TL_HIP_UNARY(acos, ::acos) TL_HIP_UNARY(atan, ::atan)
TL_HIP_UNARY(sinh, ::sinh) TL_HIP_UNARY(cosh, ::cosh) TL_HIP_UNARY(tanh, ::tanh) TL_HIP_UNARY(floor, ::floor)
TL_HIP_UNARY(ceil, ::ceil) TL_HIP_UNARY(round, ::round) TL_HIP_UNARY(trunc, ::trunc) TL_HIP_UNARY(erf, ::erf)
TL_HIP_UNARY(rint, ::rint) TL_HIP_UNARY(nearbyint, ::nearbyint) TL_HIP_UNARY(exp10, ::exp10)
#undef TL_HIP_UNARY
template <typename T> __device__ inline T sigmoid(T x) { return T(1.f / (1.f + ::expf(-f32(x)))); }
__device__ inline double sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }
template <typename T> __device__ inline T abs(T x) { return x < T(0) ? T(-x) : x; }
__device__ inline float abs(float x) { return fabsf(x); }
__device__ inline bfloat16_t abs(bfloat16_t x) { bfloat16_t r; r.bits = x.bits & 0x7fff; return r; }
template <typename T> __device__ inline T pow(T a, T b) { return T(::powf(f32(a), f32(b))); }
__device__ inline double pow(double a, double b) { return ::pow(a, b); }
template <typename T> __device__ inline T fmod(T a, T b) { return T(::fmodf(f32(a), f32(b))); }
template <typename T> __device__ inline T atan2(T a, T b) { return T(::atan2f(f32(a), f32(b))); }
template <typename T> __device__ inline bool isnan(T x) { float f = f32(x); return f != f; }
template <typename T> __device__ inline bool isinf(T x) { return ::isinf(f32(x)); }
template <typename T> __device__ inline bool isfinite(T x) { return ::isfinite(f32(x)); }

template <typename T> __device__ inline T max(T a, T b) { return a < b ? b : a; }
template <typename T> __device__ inline T min(T a, T b) { return b < a ? b : a; }
__device__ inline float max(float a, float b) { return fmaxf(a, b); }
__device__ inline float min(float a, float b) { return fminf(a, b); }
__device__ inline bfloat16_t max(bfloat16_t a, bfloat16_t b) { return bfloat16_t(fmaxf(a, b)); }
__device__ inline bfloat16_t min(bfloat16_t a, bfloat16_t b) { return bfloat16_t(fminf(a, b)); }
template <typename T> __device__ inline T max_nan(T a, T b) { return isnan(a) ? a : isnan(b) ? b : max(a, b); }
template <typename T> __device__ inline T min_nan(T a, T b) { return isnan(a) ? a : isnan(b) ? b : min(a, b); }

template <typename T> __device__ inline T floordiv(T a, T b) {
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> __device__ inline T floormod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ inline float floordiv(float a, float b) { return floorf(a / b); }
__device__ inline float floormod(float a, float b) { return a - floorf(a / b) * b; }

// wavefront shuffles (64 lanes) --------------------------------------------------------
template <typename T> __device__ inline T shfl_xor(T v, int mask) { return __shfl_xor(v, mask, 64); }
__device__ inline half_t shfl_xor(half_t v, int mask) { return half_t(__shfl_xor((float)v, mask, 64)); }
__device__ inline bfloat16_t shfl_xor(bfloat16_t v, int mask) { return bfloat16_t(__shfl_xor((float)v, mask, 64)); }

// atomics: the previous value -----------------------------------------------------------
template <typename T> __device__ inline T atomic_add(T* p, T v) { return atomicAdd(p, v); }
template <typename T> __device__ inline T atomic_max(T* p, T v) { return atomicMax(p, v); }
template <typename T> __device__ inline T atomic_min(T* p, T v) { return atomicMin(p, v); }
// 16-bit floats: a compare-and-swap on the aligned 32-bit word holding them
template <typename T, typename F> __device__ inline T atomic_cas16(T* p, F op) {
  uintptr_t a = (uintptr_t)p;
  unsigned int* w = (unsigned int*)(a & ~(uintptr_t)3);
  int shift = (a & 2) ? 16 : 0;
  unsigned int old = *w, assumed;
  T prev;
  do {
    assumed = old;
    uint16_t bits = (uint16_t)(assumed >> shift);
    __builtin_memcpy(&prev, &bits, 2);
    T next = op(prev);
    uint16_t nb;
    __builtin_memcpy(&nb, &next, 2);
    old = atomicCAS(w, assumed, (assumed & ~(0xffffu << shift)) | ((unsigned int)nb << shift));
  } while (assumed != old);
  return prev;
}
__device__ inline half_t atomic_add(half_t* p, half_t v) {
  return atomic_cas16(p, [=](half_t x) { return half_t((float)x + (float)v); });
}
__device__ inline bfloat16_t atomic_add(bfloat16_t* p, bfloat16_t v) {
  return atomic_cas16(p, [=](bfloat16_t x) { return bfloat16_t((float)x + (float)v); });
}
__device__ inline float atomic_max(float* p, float v) {
  unsigned int* w = (unsigned int*)p;
  unsigned int old = *w, assumed;
  do {
    assumed = old;
    if (__uint_as_float(assumed) >= v) break;
    old = atomicCAS(w, assumed, __float_as_uint(v));
  } while (assumed != old);
  return __uint_as_float(old);
}
__device__ inline float atomic_min(float* p, float v) {
  unsigned int* w = (unsigned int*)p;
  unsigned int old = *w, assumed;
  do {
    assumed = old;
    if (__uint_as_float(assumed) <= v) break;
    old = atomicCAS(w, assumed, __float_as_uint(v));
  } while (assumed != old);
  return __uint_as_float(old);
}

// vectors of N elements moved as one aligned load / store (T.copy) ---------------------
template <typename T, int N> struct alignas(sizeof(T) * N) vec { T v[N]; };
template <typename D, typename S, int N> __device__ inline vec<D, N> vec_cast(const vec<S, N>& x) {
  vec<D, N> y;
#pragma unroll
  for (int i = 0; i < N; ++i) y.v[i] = static_cast<D>(x.v[i]);
  return y;
}

// MFMA operands: `a_regs` elements of one lane as the instruction's register type --------
template <typename V, typename T> __device__ inline V load_operand(const T* p) {
  return *(const V*)p;   // consecutive and aligned (the planner checked)
}
template <typename V, typename T> __device__ inline V gather_operand(const T* p, int stride) {
  constexpr int n = sizeof(V) / sizeof(T);
  T tmp[n];
#pragma unroll
  for (int r = 0; r < n; ++r) tmp[r] = p[r * stride];
  V v;
  __builtin_memcpy(&v, tmp, sizeof(V));
  return v;
}

}  // namespace tl
