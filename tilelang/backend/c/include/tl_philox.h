// T.rng_init / T.rng_rand / T.rng_rand_float on every backend: the Philox4x32-10
// counter-based generator with cuRAND's stream layout (what curand_init, curand,
// curand_uniform(_double) and curand_normal(_double) give for
// curandStatePhilox4_32_10_t), written out so that kernels need no cuRAND headers.
//
// One implementation for the CUDA backend (included by tl_cuda/random.h, compiled by
// NVRTC: __CUDACC__) and the CPU backend (tl_cpu_random.h, the host compiler). The
// integer and uniform draws are the same on both, bit for bit (fused multiply-adds on
// both; checked against cuRAND on an H200). Normal draws use each side's math: the
// GPU's fast-math logf / sqrtf, __sincosf and sincospi, the C library's on the CPU,
// so they agree to rounding.
//
// The state is a per-thread array of 16 words, only ever indexed by constants so that
// it stays in registers on the GPU: counter[4], output block[4], key[2], position in
// the block, and the Box-Muller spares (flag, flag for double, float, double as two
// words, low word first).
#pragma once

#if defined(__CUDACC__)
#define TL_PHILOX_FN __device__ __forceinline__
#else
#include <cmath>
#include <cstring>
#define TL_PHILOX_FN inline
#endif

namespace tl {
namespace philox {

enum { CTR = 0, OUT = 4, KEY = 8, POS = 10, FLAG = 11, FLAG_D = 12, SPARE = 13, SPARE_D = 14 };

// the few operations each side spells its own way ------------------------------------
TL_PHILOX_FN unsigned mulhi(unsigned a, unsigned b) {
#if defined(__CUDACC__)
  return __umulhi(a, b);
#else
  return (unsigned)(((unsigned long long)a * b) >> 32);
#endif
}

TL_PHILOX_FN float fma_f(float a, float b, float c) {
#if defined(__CUDACC__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

TL_PHILOX_FN double fma_d(double a, double b, double c) {
#if defined(__CUDACC__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// sqrt(-2 log u), the Box-Muller radius
TL_PHILOX_FN float radius_f(float u) {
#if defined(__CUDACC__)
  return sqrtf(-2.0f * logf(u));
#else
  return std::sqrt(-2.0f * std::log(u));
#endif
}

TL_PHILOX_FN double radius_d(double u) {
#if defined(__CUDACC__)
  return sqrt(-2.0 * log(u));
#else
  return std::sqrt(-2.0 * std::log(u));
#endif
}

TL_PHILOX_FN void sincos_f(float v, float* sn, float* cs) {
#if defined(__CUDACC__)
  __sincosf(v, sn, cs);
#else
  *sn = std::sin(v);
  *cs = std::cos(v);
#endif
}

// sin(pi v), cos(pi v)
TL_PHILOX_FN void sincospi_d(double v, double* sn, double* cs) {
#if defined(__CUDACC__)
  sincospi(v, sn, cs);
#else
  const double pi = 3.1415926535897932;
  *sn = std::sin(v * pi);
  *cs = std::cos(v * pi);
#endif
}

TL_PHILOX_FN unsigned float_bits(float f) {
#if defined(__CUDACC__)
  return __float_as_uint(f);
#else
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

TL_PHILOX_FN float bits_float(unsigned u) {
#if defined(__CUDACC__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

TL_PHILOX_FN unsigned low_word(double d) {
#if defined(__CUDACC__)
  return (unsigned)__double2loint(d);
#else
  unsigned long long b;
  std::memcpy(&b, &d, 8);
  return (unsigned)b;
#endif
}

TL_PHILOX_FN unsigned high_word(double d) {
#if defined(__CUDACC__)
  return (unsigned)__double2hiint(d);
#else
  unsigned long long b;
  std::memcpy(&b, &d, 8);
  return (unsigned)(b >> 32);
#endif
}

TL_PHILOX_FN double words_double(unsigned lo, unsigned hi) {
#if defined(__CUDACC__)
  return __hiloint2double((int)hi, (int)lo);
#else
  unsigned long long b = ((unsigned long long)hi << 32) | lo;
  double d;
  std::memcpy(&d, &b, 8);
  return d;
#endif
}

// the generator --------------------------------------------------------------------
TL_PHILOX_FN void refill(unsigned* s) {
  unsigned c0 = s[CTR], c1 = s[CTR + 1], c2 = s[CTR + 2], c3 = s[CTR + 3];
  unsigned k0 = s[KEY], k1 = s[KEY + 1];
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    unsigned hi0 = mulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    unsigned hi1 = mulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  s[OUT] = c0; s[OUT + 1] = c1; s[OUT + 2] = c2; s[OUT + 3] = c3;
}

TL_PHILOX_FN void next_block(unsigned* s) {
  if (++s[CTR]) return;
  if (++s[CTR + 1]) return;
  if (++s[CTR + 2]) return;
  ++s[CTR + 3];
}

// counter += n (cuRAND's carry rule, kept as is)
TL_PHILOX_FN void advance(unsigned* s, unsigned long long n) {
  unsigned nlo = (unsigned)n, nhi = (unsigned)(n >> 32);
  s[CTR] += nlo;
  if (s[CTR] < nlo) nhi++;
  s[CTR + 1] += nhi;
  if (nhi <= s[CTR + 1]) return;
  if (++s[CTR + 2]) return;
  ++s[CTR + 3];
}

// output word i of the block, by constant indices only
TL_PHILOX_FN unsigned out(const unsigned* s, unsigned i) {
  return i == 0 ? s[OUT] : i == 1 ? s[OUT + 1] : i == 2 ? s[OUT + 2] : s[OUT + 3];
}

// the Box-Muller transform every generator family shares (curand's): a spare value is kept
// for the next call; u in (0, 1], v the angle (radians for float, units of pi for double)
TL_PHILOX_FN bool take_spare_f(unsigned* s, float* out) {
  if (!s[FLAG]) return false;
  s[FLAG] = 0u;
  *out = bits_float(s[SPARE]);
  return true;
}

TL_PHILOX_FN float box_muller_f(unsigned* s, float u, float v) {
  float r = radius_f(u), sn, cs;
  sincos_f(v, &sn, &cs);
  s[SPARE] = float_bits(cs * r);
  s[FLAG] = 1u;
  return sn * r;
}

TL_PHILOX_FN bool take_spare_d(unsigned* s, double* out) {
  if (!s[FLAG_D]) return false;
  s[FLAG_D] = 0u;
  *out = words_double(s[SPARE_D], s[SPARE_D + 1]);
  return true;
}

TL_PHILOX_FN double box_muller_d(unsigned* s, double u, double v) {
  double r = radius_d(u), sn, cs;
  sincospi_d(v, &sn, &cs);
  double spare = cs * r;
  s[SPARE_D] = low_word(spare);
  s[SPARE_D + 1] = high_word(spare);
  s[FLAG_D] = 1u;
  return sn * r;
}

// curand_normal from two 32-bit draws, curand_normal_double from four (Philox, XORWOW)
TL_PHILOX_FN float normal_from_words(unsigned* s, unsigned x, unsigned y) {
  const float inv = 2.3283064e-10f, inv_2pi = 2.3283064e-10f * 6.2831855f;
  return box_muller_f(s, fma_f((float)x, inv, inv / 2.0f), fma_f((float)y, inv_2pi, inv_2pi / 2.0f));
}

TL_PHILOX_FN double normal_double_from_words(unsigned* s, const unsigned* w) {
  const double inv53 = 1.1102230246251565e-16;
  unsigned long long zx = (unsigned long long)w[0] ^ ((unsigned long long)w[1] << 21);
  unsigned long long zy = (unsigned long long)w[2] ^ ((unsigned long long)w[3] << 21);
  return box_muller_d(s, fma_d((double)zx, inv53, inv53 / 2.0), fma_d((double)zy, inv53 * 2.0, inv53));
}

}  // namespace philox

TL_PHILOX_FN void rng_init(unsigned* s, unsigned long long seed, unsigned long long subsequence,
                           unsigned long long offset) {
  using namespace philox;
  s[CTR] = s[CTR + 1] = 0u;
  // subsequence picks the counter's upper half
  s[CTR + 2] = (unsigned)subsequence;
  s[CTR + 3] = (unsigned)(subsequence >> 32);
  s[KEY] = (unsigned)seed;
  s[KEY + 1] = (unsigned)(seed >> 32);
  s[FLAG] = s[FLAG_D] = s[SPARE] = s[SPARE_D] = s[SPARE_D + 1] = 0u;
  s[POS] = (unsigned)(offset & 3);
  advance(s, offset / 4);
  refill(s);
}

TL_PHILOX_FN unsigned rng_rand(unsigned* s) {
  using namespace philox;
  unsigned pos = s[POS];
  unsigned r = out(s, pos);
  if (pos == 3) {
    next_block(s);
    refill(s);
    s[POS] = 0u;
  } else {
    s[POS] = pos + 1;
  }
  return r;
}

// four draws at once without moving the position in the block (curand4)
TL_PHILOX_FN void rng_rand4(unsigned* s, unsigned* r) {
  using namespace philox;
  unsigned t0 = s[OUT], t1 = s[OUT + 1], t2 = s[OUT + 2], t3 = s[OUT + 3];
  next_block(s);
  refill(s);
  unsigned pos = s[POS];
  r[0] = pos == 0 ? t0 : pos == 1 ? t1 : pos == 2 ? t2 : t3;
  r[1] = pos == 0 ? t1 : pos == 1 ? t2 : pos == 2 ? t3 : s[OUT];
  r[2] = pos == 0 ? t2 : pos == 1 ? t3 : pos == 2 ? s[OUT] : s[OUT + 1];
  r[3] = pos == 0 ? t3 : pos == 1 ? s[OUT] : pos == 2 ? s[OUT + 1] : s[OUT + 2];
}

TL_PHILOX_FN float rng_uniform(unsigned* s) {
  const float inv = 2.3283064e-10f;   // 2^-32: (0, 1], never 0
  return philox::fma_f((float)rng_rand(s), inv, inv / 2.0f);
}

TL_PHILOX_FN double rng_uniform_double(unsigned* s) {
  const double inv = 2.3283064365386963e-10;
  return philox::fma_d((double)rng_rand(s), inv, inv);
}

TL_PHILOX_FN float rng_normal(unsigned* s) {
  float spare;
  if (philox::take_spare_f(s, &spare)) return spare;
  unsigned x = rng_rand(s), y = rng_rand(s);
  return philox::normal_from_words(s, x, y);
}

TL_PHILOX_FN double rng_normal_double(unsigned* s) {
  double spare;
  if (philox::take_spare_d(s, &spare)) return spare;
  unsigned w[4];
  rng_rand4(s, w);
  return philox::normal_double_from_words(s, w);
}

}  // namespace tl
