// Atomics on global/shared memory. fp32/fp16/bf16 add are native (sm_70+/sm_80+);
// float max/min go through a compare-and-swap loop.
#pragma once
#include "common.h"

namespace tl {

template <class T> TL_DEVICE void atomic_add(T* p, T v) { atomicAdd(p, v); }

template <class T> TL_DEVICE void atomic_max(T* p, T v) { atomicMax(p, v); }
template <class T> TL_DEVICE void atomic_min(T* p, T v) { atomicMin(p, v); }

TL_DEVICE void atomic_max(float* p, float v) {
  int* ip = reinterpret_cast<int*>(p);
  int old = *ip;
  while (__int_as_float(old) < v) {
    int prev = atomicCAS(ip, old, __float_as_int(v));
    if (prev == old) break;
    old = prev;
  }
}
TL_DEVICE void atomic_min(float* p, float v) {
  int* ip = reinterpret_cast<int*>(p);
  int old = *ip;
  while (__int_as_float(old) > v) {
    int prev = atomicCAS(ip, old, __float_as_int(v));
    if (prev == old) break;
    old = prev;
  }
}

}  // namespace tl
