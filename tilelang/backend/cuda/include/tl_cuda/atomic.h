// Atomics on global/shared memory. fp32/fp16/bf16 add are native (sm_70+/sm_80+);
// float max/min go through a compare-and-swap loop. Each returns the previous value
// (`T.atomic_add(..., return_prev=True)`). Memory orders (`memory_order=`) are fences
// around the relaxed operation: release before, acquire after, both for acq_rel/seq_cst
// (ids as cuda::memory_order: 0 relaxed, 2 acquire, 3 release, 4 acq_rel, 5 seq_cst).
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

// compare-and-swap loop on the bits of a 16-, 32- or 64-bit value: *p = f(*p)
template <int N> struct uint_bytes;
template <> struct uint_bytes<2> { using type = unsigned short; };
template <> struct uint_bytes<4> { using type = unsigned int; };
template <> struct uint_bytes<8> { using type = unsigned long long; };
template <class T, class F> TL_DEVICE T atomic_update(T* p, F f) {
  using U = typename uint_bytes<sizeof(T)>::type;
  U* up = reinterpret_cast<U*>(p);
  U old = *reinterpret_cast<volatile U*>(up);
  while (true) {
    const T o = bitcast<T>(old);
    const U nu = bitcast<U>(f(o));
    if (nu == old) return o;
    const U prev = atomicCAS(up, old, nu);
    if (prev == old) return o;
    old = prev;
  }
}
#define TL_ATOMIC_MINMAX(T)                                                                         \
  TL_DEVICE T atomic_max(T* p, T v) { return atomic_update(p, [v](T o) { return tl::max(o, v); }); } \
  TL_DEVICE T atomic_min(T* p, T v) { return atomic_update(p, [v](T o) { return tl::min(o, v); }); }
TL_ATOMIC_MINMAX(float)
TL_ATOMIC_MINMAX(double)
TL_ATOMIC_MINMAX(half)
TL_ATOMIC_MINMAX(bfloat16_t)
#undef TL_ATOMIC_MINMAX

// memory orders
template <int O> TL_DEVICE void order_before() {
  if (O == 3 || O == 4 || O == 5) __threadfence();
}
template <int O> TL_DEVICE void order_after() {
  if (O == 2 || O == 4 || O == 5) __threadfence();
}
#define TL_ORDERED(NAME)                                                                  \
  template <int O, class T, class V> TL_DEVICE T NAME##_ordered(T* p, V v) {              \
    order_before<O>();                                                                    \
    const T r = NAME(p, v);                                                               \
    order_after<O>();                                                                     \
    return r;                                                                             \
  }
TL_ORDERED(atomic_add)
TL_ORDERED(atomic_max)
TL_ORDERED(atomic_min)
TL_ORDERED(atomic_or)
TL_ORDERED(atomic_and)
TL_ORDERED(atomic_xor)
#undef TL_ORDERED

// Vector atomic adds (backend/cuda/vector_atomic.py): V consecutive elements, the first
// V * sizeof(T)-aligned, in one instruction where the GPU has one (float2/float4 on sm_90,
// half2, bfloat162), else one per element. Named as the published package names them.
TL_DEVICE void AtomicAddx2(float* p, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(p), make_float2(a, b));
#else
  atomicAdd(p, a);
  atomicAdd(p + 1, b);
#endif
}
TL_DEVICE void AtomicAddx4(float* p, float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(p), make_float4(a, b, c, d));
#else
  AtomicAddx2(p, a, b);
  AtomicAddx2(p + 2, c, d);
#endif
}
TL_DEVICE void AtomicAddx2(half* p, half a, half b) {
  atomicAdd(reinterpret_cast<half2*>(p), __halves2half2(a, b));
}
TL_DEVICE void AtomicAddx4(half* p, half a, half b, half c, half d) {
  AtomicAddx2(p, a, b);
  AtomicAddx2(p + 2, c, d);
}
TL_DEVICE void AtomicAddx2(bfloat16_t* p, bfloat16_t a, bfloat16_t b) {
  atomicAdd(reinterpret_cast<__nv_bfloat162*>(p), __halves2bfloat162(a, b));
}
TL_DEVICE void AtomicAddx4(bfloat16_t* p, bfloat16_t a, bfloat16_t b, bfloat16_t c, bfloat16_t d) {
  AtomicAddx2(p, a, b);
  AtomicAddx2(p + 2, c, d);
}
template <int O, class T, class... V> TL_DEVICE void AtomicAddx2_ordered(T* p, V... v) {
  order_before<O>();
  AtomicAddx2(p, v...);
  order_after<O>();
}
template <int O, class T, class... V> TL_DEVICE void AtomicAddx4_ordered(T* p, V... v) {
  order_before<O>();
  AtomicAddx4(p, v...);
  order_after<O>();
}

// T.atomic_load / T.atomic_store: one aligned access the compiler may not cache or
// reorder (volatile), with the order's fences
template <int O, class T> TL_DEVICE T atomic_load(const T* p) {
  using U = typename uint_bytes<sizeof(T)>::type;
  if (O == 5) __threadfence();
  const T r = bitcast<T>(*reinterpret_cast<const volatile U*>(p));
  order_after<O>();
  return r;
}
template <int O, class T> TL_DEVICE void atomic_store(T* p, T v) {
  using U = typename uint_bytes<sizeof(T)>::type;
  order_before<O>();
  *reinterpret_cast<volatile U*>(p) = bitcast<U>(v);
  if (O == 5) __threadfence();
}

}  // namespace tl
