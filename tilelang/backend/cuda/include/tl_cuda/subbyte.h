// 4-bit elements (int4, uint4, float4_e2m1fn) in tensors, two per byte: element i is the
// low (i even) or high (i odd) nibble of byte i / 2. A read extracts the nibble; a write
// clears and sets its bits with two atomics on the containing 32-bit word, so that threads
// writing the two halves of one byte do not race. A block's own buffers (registers,
// shared memory) hold one 4-bit value per byte.
#pragma once
#include "common.h"

namespace tl {

template <class T> TL_DEVICE T from_nibble(unsigned n);
template <> TL_DEVICE signed char from_nibble<signed char>(unsigned n) {
  return (signed char)((signed char)(n << 4) >> 4);
}
template <> TL_DEVICE unsigned char from_nibble<unsigned char>(unsigned n) { return (unsigned char)n; }
template <> TL_DEVICE __nv_fp4_e2m1 from_nibble<__nv_fp4_e2m1>(unsigned n) {
  __nv_fp4_e2m1 r;
  r.__x = (__nv_fp4_storage_t)n;
  return r;
}
TL_DEVICE unsigned to_nibble(signed char v) { return (unsigned)(unsigned char)v & 0xFu; }
TL_DEVICE unsigned to_nibble(unsigned char v) { return (unsigned)v & 0xFu; }
TL_DEVICE unsigned to_nibble(__nv_fp4_e2m1 v) { return (unsigned)v.__x & 0xFu; }

template <class T> TL_DEVICE T load4(const unsigned char* p, long long i) {
  return from_nibble<T>((p[i >> 1] >> ((unsigned)(i & 1) * 4u)) & 0xFu);
}
template <class T> TL_DEVICE void store4(unsigned char* p, long long i, T v) {
  unsigned char* byte = p + (i >> 1);
  const size_t addr = reinterpret_cast<size_t>(byte);
  unsigned* word = reinterpret_cast<unsigned*>(addr & ~(size_t)3);
  const unsigned bit = (unsigned)(addr & 3) * 8u + (unsigned)(i & 1) * 4u;
  atomicAnd(word, ~(0xFu << bit));
  atomicOr(word, to_nibble(v) << bit);
}

}  // namespace tl
