// T.rng_init(..., generator="curandStateXORWOW_t" / "curandStateMRG32k3a_t"): the two other
// generator families of cuRAND's device API, with curand_init's layout (seed mixing, then
// subsequence * 2^67 (XORWOW) or 2^76 (MRG32k3a) draws plus offset skipped) and the draws
// curand, curand_uniform(_double) and curand_normal(_double) take from them, written out
// like tl_philox.h (whose helpers they share) so that kernels need no cuRAND headers. The
// CPU and CUDA backends run the same code; tests/language/rng_reference.py is the Python
// oracle of both generators.
//
// The per-thread state is the same 16 words as Philox's: XORWOW v[5] at 0..4 and its Weyl
// counter d at 5; MRG32k3a s1[3] at 0..2 and s2[3] at 3..5; the Box-Muller spares where
// Philox keeps them (philox::FLAG ...).
//
// Skipping ahead: MRG32k3a's step is a 3x3 matrix mod m, raised to the jump by squaring.
// XORWOW's 160-bit xorshift is linear over GF(2): A^J = (x^J mod P)(A) for P the
// characteristic polynomial of A (degree 160, computed by Berlekamp-Massey from the
// generator itself: rng_reference.py), applied to v by Horner's rule (160 steps).
#pragma once
#include "tl_philox.h"

// the skip-ahead runs once per thread: kept out of line (and its loops rolled) so that NVRTC
// compiles it once, taking and returning the words by value so that the state stays in
// registers
#if defined(__CUDACC__)
#define TL_RNG_COLD __device__ __noinline__
#define TL_RNG_ROLLED _Pragma("unroll 1")
#else
#define TL_RNG_COLD inline
#define TL_RNG_ROLLED
#endif

namespace tl {

// XORWOW ------------------------------------------------------------------------------
namespace xorwow {

enum { V = 0, D = 5 };

// the low 160 coefficients of x^160 + ... (the xorshift's characteristic polynomial)
#if defined(__CUDACC__)
__device__
#endif
static const unsigned P_LOW[5] = {0x60001u, 0x8610030u, 0x62121u, 0xf3c0035u, 0xf0eu};

TL_PHILOX_FN void shift5(unsigned* v) {   // the linear part of one draw, on v[0..4]
  unsigned t = v[0] ^ (v[0] >> 2);
  v[0] = v[1]; v[1] = v[2]; v[2] = v[3]; v[3] = v[4];
  v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
}

TL_PHILOX_FN void times_x(unsigned* r) {   // r = r * x mod P
  unsigned carry = r[4] >> 31;
  for (int k = 4; k > 0; --k) r[k] = (r[k] << 1) | (r[k - 1] >> 31);
  r[0] <<= 1;
  if (carry)
    for (int k = 0; k < 5; ++k) r[k] ^= P_LOW[k];
}

TL_PHILOX_FN void mulmod(const unsigned* a, const unsigned* b, unsigned* out) {   // out = a * b mod P
  unsigned r[5] = {0u, 0u, 0u, 0u, 0u};
  TL_RNG_ROLLED
  for (int i = 159; i >= 0; --i) {
    times_x(r);
    if ((b[i >> 5] >> (i & 31)) & 1u)
      for (int k = 0; k < 5; ++k) r[k] ^= a[k];
  }
  for (int k = 0; k < 5; ++k) out[k] = r[k];
}

struct Words5 { unsigned w[5]; };

// A^J v for J = subsequence * 2^67 + offset (bits 64..66 of J are 0: no carries)
TL_RNG_COLD Words5 jumped(Words5 v, unsigned long long subsequence, unsigned long long offset) {
  unsigned r[5] = {1u, 0u, 0u, 0u, 0u};   // x^J mod P, by square and multiply
  TL_RNG_ROLLED
  for (int i = 130; i >= 0; --i) {
    unsigned bit = i >= 67 ? (unsigned)((subsequence >> (i - 67)) & 1ull)
                           : i < 64 ? (unsigned)((offset >> i) & 1ull) : 0u;
    mulmod(r, r, r);
    if (bit) times_x(r);
  }
  Words5 acc = {{0u, 0u, 0u, 0u, 0u}};
  TL_RNG_ROLLED
  for (int i = 159; i >= 0; --i) {
    shift5(acc.w);
    if ((r[i >> 5] >> (i & 31)) & 1u)
      for (int k = 0; k < 5; ++k) acc.w[k] ^= v.w[k];
  }
  return acc;
}

TL_PHILOX_FN void rng_init(unsigned* s, unsigned long long seed, unsigned long long subsequence,
                           unsigned long long offset) {
  using namespace philox;
  unsigned s0 = (unsigned)seed ^ 0xaad26b49u, s1 = (unsigned)(seed >> 32) ^ 0xf7dcefddu;
  unsigned t0 = 1099087573u * s0, t1 = 2591861531u * s1;
  s[V] = 123456789u + t0; s[V + 1] = 362436069u ^ t0; s[V + 2] = 521288629u + t1;
  s[V + 3] = 88675123u ^ t1; s[V + 4] = 5783321u + t0;
  s[D] = 6615241u + t1 + t0;
  if (subsequence | offset) {
    Words5 v = {{s[V], s[V + 1], s[V + 2], s[V + 3], s[V + 4]}};
    v = jumped(v, subsequence, offset);
    s[V] = v.w[0]; s[V + 1] = v.w[1]; s[V + 2] = v.w[2]; s[V + 3] = v.w[3]; s[V + 4] = v.w[4];
  }
  s[D] += 362437u * (unsigned)offset;
  s[FLAG] = s[FLAG_D] = s[SPARE] = s[SPARE_D] = s[SPARE_D + 1] = 0u;
}

TL_PHILOX_FN unsigned rng_rand(unsigned* s) {
  unsigned t = s[V] ^ (s[V] >> 2);
  s[V] = s[V + 1]; s[V + 1] = s[V + 2]; s[V + 2] = s[V + 3]; s[V + 3] = s[V + 4];
  s[V + 4] = (s[V + 4] ^ (s[V + 4] << 4)) ^ (t ^ (t << 1));
  s[D] += 362437u;
  return s[V + 4] + s[D];
}

}  // namespace xorwow

// MRG32k3a ----------------------------------------------------------------------------
namespace mrg32k3a {

enum { S1 = 0, S2 = 3 };
const unsigned long long M1 = 4294967087ull, M2 = 4294944443ull;

TL_RNG_COLD void matmul(const unsigned long long* a, const unsigned long long* b, unsigned long long* out,
                         unsigned long long m) {
  unsigned long long r[9];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      unsigned long long x = 0;
      for (int k = 0; k < 3; ++k) x += (a[3 * i + k] * b[3 * k + j]) % m;
      r[3 * i + j] = x % m;
    }
  for (int k = 0; k < 9; ++k) out[k] = r[k];
}

struct Words3 { unsigned w[3]; };

// v (mod m) times A^(n * 2^e), A the step matrix of component `second` (s2) or s1
TL_RNG_COLD Words3 skipped(Words3 v, bool second, unsigned long long n, int e) {
  const unsigned long long m = second ? M2 : M1;
  unsigned long long a[9] = {0, 1, 0, 0, 0, 1, 0, 0, 0}, r[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  a[6] = second ? M2 - 1370589ull : M1 - 810728ull;
  a[7] = second ? 0ull : 1403580ull;
  a[8] = second ? 527612ull : 0ull;
  TL_RNG_ROLLED
  for (int k = 0; k < e; ++k) matmul(a, a, a, m);
  TL_RNG_ROLLED
  for (; n; n >>= 1) {
    if (n & 1ull) matmul(r, a, r, m);
    matmul(a, a, a, m);
  }
  Words3 out;
  for (int i = 0; i < 3; ++i) {
    unsigned long long x = 0;
    for (int k = 0; k < 3; ++k) x += (r[3 * i + k] * v.w[k]) % m;
    out.w[i] = (unsigned)(x % m);
  }
  return out;
}

TL_PHILOX_FN void skip(unsigned* s, unsigned long long n, int e) {
  Words3 a = {{s[S1], s[S1 + 1], s[S1 + 2]}}, b = {{s[S2], s[S2 + 1], s[S2 + 2]}};
  a = skipped(a, false, n, e);
  b = skipped(b, true, n, e);
  s[S1] = a.w[0]; s[S1 + 1] = a.w[1]; s[S1 + 2] = a.w[2];
  s[S2] = b.w[0]; s[S2 + 1] = b.w[1]; s[S2 + 2] = b.w[2];
}

TL_PHILOX_FN void rng_init(unsigned* s, unsigned long long seed, unsigned long long subsequence,
                           unsigned long long offset) {
  using namespace philox;
  for (int k = 0; k < 6; ++k) s[k] = 12345u;
  if (seed) {
    unsigned long long x1 = (unsigned)seed ^ 0x55555555u, x2 = (unsigned)(seed >> 32) ^ 0xAAAAAAAAu;
    s[S1] = (unsigned)(x1 * 12345ull % M1); s[S1 + 1] = (unsigned)(x2 * 12345ull % M1);
    s[S1 + 2] = (unsigned)(x1 * 12345ull % M1);
    s[S2] = (unsigned)(x2 * 12345ull % M2); s[S2 + 1] = (unsigned)(x1 * 12345ull % M2);
    s[S2 + 2] = (unsigned)(x2 * 12345ull % M2);
  }
  if (subsequence) skip(s, subsequence, 76);
  if (offset) skip(s, offset, 0);
  s[FLAG] = s[FLAG_D] = s[SPARE] = s[SPARE_D] = s[SPARE_D + 1] = 0u;
}

// the next value z in [1, m1] (curand_MRG32k3a)
TL_PHILOX_FN double next(unsigned* s) {
  unsigned long long p1 = (1403580ull * s[S1 + 1] + (M1 - 810728ull) * s[S1]) % M1;
  unsigned long long p2 = (527612ull * s[S2 + 2] + (M2 - 1370589ull) * s[S2]) % M2;
  s[S1] = s[S1 + 1]; s[S1 + 1] = s[S1 + 2]; s[S1 + 2] = (unsigned)p1;
  s[S2] = s[S2 + 1]; s[S2 + 1] = s[S2 + 2]; s[S2 + 2] = (unsigned)p2;
  return (double)(p1 > p2 ? p1 - p2 : p1 - p2 + M1);
}

TL_PHILOX_FN unsigned rng_rand(unsigned* s) { return (unsigned)(next(s) * 1.000000048662); }

TL_PHILOX_FN double rng_uniform_double(unsigned* s) { return next(s) * 2.328306549295728e-10; }

TL_PHILOX_FN float rng_uniform(unsigned* s) { return (float)rng_uniform_double(s); }

TL_PHILOX_FN float rng_normal(unsigned* s) {
  float spare;
  if (philox::take_spare_f(s, &spare)) return spare;
  float u = rng_uniform(s), v = rng_uniform(s) * 6.2831855f;
  return philox::box_muller_f(s, u, v);
}

TL_PHILOX_FN double rng_normal_double(unsigned* s) {
  double spare;
  if (philox::take_spare_d(s, &spare)) return spare;
  double u = rng_uniform_double(s), v = rng_uniform_double(s) * 2.0;
  return philox::box_muller_d(s, u, v);
}

}  // namespace mrg32k3a

// XORWOW's float draws: curand's transforms of its 32-bit draws (as Philox's, but the
// double forms take their words one draw at a time)
namespace xorwow {

TL_PHILOX_FN float rng_uniform(unsigned* s) {
  const float inv = 2.3283064e-10f;
  return philox::fma_f((float)rng_rand(s), inv, inv / 2.0f);
}

TL_PHILOX_FN double rng_uniform_double(unsigned* s) {
  const double inv53 = 1.1102230246251565e-16;
  unsigned x = rng_rand(s), y = rng_rand(s);
  unsigned long long z = (unsigned long long)x ^ ((unsigned long long)y << 21);
  return philox::fma_d((double)z, inv53, inv53 / 2.0);
}

TL_PHILOX_FN float rng_normal(unsigned* s) {
  float spare;
  if (philox::take_spare_f(s, &spare)) return spare;
  unsigned x = rng_rand(s), y = rng_rand(s);
  return philox::normal_from_words(s, x, y);
}

TL_PHILOX_FN double rng_normal_double(unsigned* s) {   // its four words one draw at a time
  double spare;
  if (philox::take_spare_d(s, &spare)) return spare;
  unsigned w[4];
  for (int k = 0; k < 4; ++k) w[k] = rng_rand(s);
  return philox::normal_double_from_words(s, w);
}

}  // namespace xorwow
}  // namespace tl
