// Atomics on global/shared memory. fp32/fp16/bf16 add are native (sm_70+/sm_80+);
// float max/min go through a compare-and-swap loop. Each returns the previous value
// (`T.atomic_add(..., return_prev=True)`).
#pragma once
#include "common.h"

namespace tl {

template <class T> TL_DEVICE T atomic_add(T* p, T v) { return atomicAdd(p, v); }

template <class T> TL_DEVICE T atomic_max(T* p, T v) { return atomicMax(p, v); }
template <class T> TL_DEVICE T atomic_min(T* p, T v) { return atomicMin(p, v); }
// bitwise (32/64-bit integers)
template <class T> TL_DEVICE T atomic_or(T* p, T v) { return atomicOr(p, v); }
template <class T> TL_DEVICE T atomic_and(T* p, T v) { return atomicAnd(p, v); }
template <class T> TL_DEVICE T atomic_xor(T* p, T v) { return atomicXor(p, v); }

TL_DEVICE float atomic_max(float* p, float v) {
  int* ip = reinterpret_cast<int*>(p);
  int old = *ip;
  while (__int_as_float(old) < v) {
    int prev = atomicCAS(ip, old, __float_as_int(v));
    if (prev == old) break;
    old = prev;
  }
  return __int_as_float(old);
}
TL_DEVICE float atomic_min(float* p, float v) {
  int* ip = reinterpret_cast<int*>(p);
  int old = *ip;
  while (__int_as_float(old) > v) {
    int prev = atomicCAS(ip, old, __float_as_int(v));
    if (prev == old) break;
    old = prev;
  }
  return __int_as_float(old);
}

}  // namespace tl
