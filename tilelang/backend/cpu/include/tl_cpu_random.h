// T.rng_* on the CPU: the Philox4x32-10 generator with cuRAND's stream layout, the
// same algorithm and 16-word state as the CUDA backend's tl_cuda/random.h (see there).
// Integer and uniform draws equal the GPU's bit for bit (fused multiply-adds on both);
// normal draws differ by rounding (the GPU's __sincosf / sincospi).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tl {
namespace philox {

enum { CTR = 0, OUT = 4, KEY = 8, POS = 10, FLAG = 11, FLAG_D = 12, SPARE = 13, SPARE_D = 14 };

inline void refill(uint32_t* s) {
  uint32_t c0 = s[CTR], c1 = s[CTR + 1], c2 = s[CTR + 2], c3 = s[CTR + 3];
  uint32_t k0 = s[KEY], k1 = s[KEY + 1];
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  s[OUT] = c0; s[OUT + 1] = c1; s[OUT + 2] = c2; s[OUT + 3] = c3;
}

inline void next_block(uint32_t* s) {
  if (++s[CTR]) return;
  if (++s[CTR + 1]) return;
  if (++s[CTR + 2]) return;
  ++s[CTR + 3];
}

inline void advance(uint32_t* s, uint64_t n) {
  uint32_t nlo = (uint32_t)n, nhi = (uint32_t)(n >> 32);
  s[CTR] += nlo;
  if (s[CTR] < nlo) nhi++;
  s[CTR + 1] += nhi;
  if (nhi <= s[CTR + 1]) return;
  if (++s[CTR + 2]) return;
  ++s[CTR + 3];
}

}  // namespace philox

inline void rng_init(uint32_t* s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  using namespace philox;
  s[CTR] = s[CTR + 1] = 0u;
  s[CTR + 2] = (uint32_t)subsequence;
  s[CTR + 3] = (uint32_t)(subsequence >> 32);
  s[KEY] = (uint32_t)seed;
  s[KEY + 1] = (uint32_t)(seed >> 32);
  s[FLAG] = s[FLAG_D] = s[SPARE] = s[SPARE_D] = s[SPARE_D + 1] = 0u;
  s[POS] = (uint32_t)(offset & 3);
  advance(s, offset / 4);
  refill(s);
}

inline uint32_t rng_rand(uint32_t* s) {
  using namespace philox;
  uint32_t pos = s[POS];
  uint32_t r = s[OUT + pos];
  if (pos == 3) {
    next_block(s);
    refill(s);
    s[POS] = 0u;
  } else {
    s[POS] = pos + 1;
  }
  return r;
}

inline void rng_rand4(uint32_t* s, uint32_t* r) {
  using namespace philox;
  uint32_t t[4] = {s[OUT], s[OUT + 1], s[OUT + 2], s[OUT + 3]};
  next_block(s);
  refill(s);
  uint32_t pos = s[POS];
  for (uint32_t i = 0; i < 4; ++i) r[i] = pos + i < 4 ? t[pos + i] : s[OUT + pos + i - 4];
}

inline float rng_uniform(uint32_t* s) {
  const float inv = 2.3283064e-10f;
  return std::fma((float)rng_rand(s), inv, inv / 2.0f);
}

inline double rng_uniform_double(uint32_t* s) {
  const double inv = 2.3283064365386963e-10;
  return std::fma((double)rng_rand(s), inv, inv);
}

inline float rng_normal(uint32_t* s) {
  using namespace philox;
  if (s[FLAG]) {
    s[FLAG] = 0u;
    float f;
    std::memcpy(&f, &s[SPARE], 4);
    return f;
  }
  uint32_t x = rng_rand(s), y = rng_rand(s);
  const float inv = 2.3283064e-10f, inv_2pi = 2.3283064e-10f * 6.2831855f;
  float u = std::fma((float)x, inv, inv / 2.0f);
  float v = std::fma((float)y, inv_2pi, inv_2pi / 2.0f);
  float r = std::sqrt(-2.0f * std::log(u));
  float spare = std::cos(v) * r;
  std::memcpy(&s[SPARE], &spare, 4);
  s[FLAG] = 1u;
  return std::sin(v) * r;
}

inline double rng_normal_double(uint32_t* s) {
  using namespace philox;
  if (s[FLAG_D]) {
    s[FLAG_D] = 0u;
    double d;
    std::memcpy(&d, &s[SPARE_D], 8);
    return d;
  }
  uint32_t w[4];
  rng_rand4(s, w);
  const double inv53 = 1.1102230246251565e-16, pi = 3.1415926535897932;
  uint64_t zx = (uint64_t)w[0] ^ ((uint64_t)w[1] << 21);
  uint64_t zy = (uint64_t)w[2] ^ ((uint64_t)w[3] << 21);
  double u = std::fma((double)zx, inv53, inv53 / 2.0);
  double v = std::fma((double)zy, inv53 * 2.0, inv53);
  double r = std::sqrt(-2.0 * std::log(u));
  double spare = std::cos(v * pi) * r;
  std::memcpy(&s[SPARE_D], &spare, 8);
  s[FLAG_D] = 1u;
  return std::sin(v * pi) * r;
}

}  // namespace tl
