// T.rng_init / T.rng_rand / T.rng_rand_float: the Philox4x32-10 counter-based generator
// with cuRAND's stream layout (what curand_init, curand, curand_uniform(_double) and
// curand_normal(_double) give for curandStatePhilox4_32_10_t), written out so that
// kernels need no cuRAND headers. The CPU backend's tl_cpu_random.h is the same
// algorithm; integer and uniform draws agree bit for bit (checked against cuRAND on an
// H200), normal ones to rounding (fast-math logf / sqrtf, __sincosf, sincospi).
//
// The state is a per-thread array of 16 words, only ever indexed by constants so that
// it stays in registers: counter[4], output block[4], key[2], position in the block,
// and the Box-Muller spares (flag, flag for double, float, double as two words).
#pragma once
#include "common.h"

namespace tl {
namespace philox {

enum { CTR = 0, OUT = 4, KEY = 8, POS = 10, FLAG = 11, FLAG_D = 12, SPARE = 13, SPARE_D = 14 };

TL_DEVICE void refill(unsigned* s) {
  unsigned c0 = s[CTR], c1 = s[CTR + 1], c2 = s[CTR + 2], c3 = s[CTR + 3];
  unsigned k0 = s[KEY], k1 = s[KEY + 1];
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    unsigned hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    unsigned hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  s[OUT] = c0; s[OUT + 1] = c1; s[OUT + 2] = c2; s[OUT + 3] = c3;
}

TL_DEVICE void next_block(unsigned* s) {
  if (++s[CTR]) return;
  if (++s[CTR + 1]) return;
  if (++s[CTR + 2]) return;
  ++s[CTR + 3];
}

// counter += n (cuRAND's carry rule, kept as is)
TL_DEVICE void advance(unsigned* s, unsigned long long n) {
  unsigned nlo = (unsigned)n, nhi = (unsigned)(n >> 32);
  s[CTR] += nlo;
  if (s[CTR] < nlo) nhi++;
  s[CTR + 1] += nhi;
  if (nhi <= s[CTR + 1]) return;
  if (++s[CTR + 2]) return;
  ++s[CTR + 3];
}

TL_DEVICE unsigned out(const unsigned* s, unsigned i) {
  return i == 0 ? s[OUT] : i == 1 ? s[OUT + 1] : i == 2 ? s[OUT + 2] : s[OUT + 3];
}

}  // namespace philox

TL_DEVICE void rng_init(unsigned* s, unsigned long long seed, unsigned long long subsequence,
                        unsigned long long offset) {
  using namespace philox;
  s[CTR] = s[CTR + 1] = 0u;
  // subsequence picks the counter's upper half
  unsigned lo = (unsigned)subsequence, hi = (unsigned)(subsequence >> 32);
  s[CTR + 2] = lo;
  s[CTR + 3] = hi;
  s[KEY] = (unsigned)seed;
  s[KEY + 1] = (unsigned)(seed >> 32);
  s[FLAG] = s[FLAG_D] = s[SPARE] = s[SPARE_D] = s[SPARE_D + 1] = 0u;
  unsigned pos = (unsigned)(offset & 3);
  unsigned long long blocks = offset / 4;
  s[POS] = pos;
  advance(s, blocks);
  refill(s);
}

TL_DEVICE unsigned rng_rand(unsigned* s) {
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
TL_DEVICE void rng_rand4(unsigned* s, unsigned* r) {
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

TL_DEVICE float rng_uniform(unsigned* s) {
  const float inv = 2.3283064e-10f;   // 2^-32: (0, 1], never 0
  return __fmaf_rn((float)rng_rand(s), inv, inv / 2.0f);
}

TL_DEVICE double rng_uniform_double(unsigned* s) {
  const double inv = 2.3283064365386963e-10;
  return __fma_rn((double)rng_rand(s), inv, inv);
}

TL_DEVICE float rng_normal(unsigned* s) {
  using namespace philox;
  if (s[FLAG]) {
    s[FLAG] = 0u;
    return __uint_as_float(s[SPARE]);
  }
  unsigned x = rng_rand(s), y = rng_rand(s);
  const float inv = 2.3283064e-10f, inv_2pi = 2.3283064e-10f * 6.2831855f;
  float u = __fmaf_rn((float)x, inv, inv / 2.0f);
  float v = __fmaf_rn((float)y, inv_2pi, inv_2pi / 2.0f);
  float r = sqrtf(-2.0f * logf(u)), sn, cs;
  __sincosf(v, &sn, &cs);
  s[SPARE] = __float_as_uint(cs * r);
  s[FLAG] = 1u;
  return sn * r;
}

TL_DEVICE double rng_normal_double(unsigned* s) {
  using namespace philox;
  if (s[FLAG_D]) {
    s[FLAG_D] = 0u;
    return __hiloint2double((int)s[SPARE_D + 1], (int)s[SPARE_D]);
  }
  unsigned w[4];
  rng_rand4(s, w);
  const double inv53 = 1.1102230246251565e-16;
  unsigned long long zx = (unsigned long long)w[0] ^ ((unsigned long long)w[1] << 21);
  unsigned long long zy = (unsigned long long)w[2] ^ ((unsigned long long)w[3] << 21);
  double u = __fma_rn((double)zx, inv53, inv53 / 2.0);
  double v = __fma_rn((double)zy, inv53 * 2.0, inv53);
  double r = sqrt(-2.0 * log(u)), sn, cs;
  sincospi(v, &sn, &cs);
  double spare = cs * r;
  s[SPARE_D] = (unsigned)__double2loint(spare);
  s[SPARE_D + 1] = (unsigned)__double2hiint(spare);
  s[FLAG_D] = 1u;
  return sn * r;
}

}  // namespace tl
