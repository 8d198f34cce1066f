// Atomics on global/shared memory, named as the published package names them (and
// exported unqualified at the end, so T.call_extern code written for it finds them):
//   AtomicAdd/Max/Min/Or/And/Xor(p, v[, order])   the read-modify-write, value unused
//   AtomicAddRet/MaxRet/...(p, v[, order])        the same, returning the previous value
//   AtomicAddx2/x4(p, lanes...[, order])          consecutive elements, one instruction
//   AtomicAddx2Ret/x4Ret(...)                     ... returning the previous values
//   AtomicLoad(p[, order]), AtomicStore(p, v[, order])
// `order` is the trailing argument, a cuda::memory_order id: 0 relaxed, 2 acquire,
// 3 release, 4 acq_rel, 5 seq_cst. Orders are fences around the relaxed operation
// (release before, acquire after, both for acq_rel/seq_cst); the helpers are inlined
// with a constant order, so a relaxed one has no fence.
#pragma once
#include "common.h"

namespace tl {

// PTX memory model: fence.acq_rel then a relaxed atomic is a release pattern, a relaxed
// atomic then fence.acq_rel an acquire pattern; seq_cst takes fence.sc (__threadfence)
TL_DEVICE void fence_acq_rel() { asm volatile("fence.acq_rel.gpu;" : : : "memory"); }
TL_DEVICE void order_before(int order) {
  if (order == 5) __threadfence();
  else if (order == 3 || order == 4) fence_acq_rel();
}
TL_DEVICE void order_after(int order) {
  if (order == 5) __threadfence();
  else if (order == 2 || order == 4) fence_acq_rel();
}

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

// relaxed read-modify-writes returning the previous value. fp16 add is native (sm_70+);
// cuda_bf16.h's bf16 add is native on sm_90 and a compare-and-swap loop below (sm_75 too)
template <class T> TL_DEVICE T fetch_add(T* p, T v) { return atomicAdd(p, v); }
template <class T> TL_DEVICE T fetch_max(T* p, T v) { return atomicMax(p, v); }
template <class T> TL_DEVICE T fetch_min(T* p, T v) { return atomicMin(p, v); }
template <class T> TL_DEVICE T fetch_or(T* p, T v) { return atomicOr(p, v); }    // 32/64-bit integers
template <class T> TL_DEVICE T fetch_and(T* p, T v) { return atomicAnd(p, v); }
template <class T> TL_DEVICE T fetch_xor(T* p, T v) { return atomicXor(p, v); }
// signed 64-bit add and bitwise ops: the unsigned instruction (two's complement)
#define TL_FETCH_S64(OP, CUDA_OP)                                                                 \
  TL_DEVICE long long fetch_##OP(long long* p, long long v) {                                    \
    return static_cast<long long>(CUDA_OP(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v))); \
  }
TL_FETCH_S64(add, atomicAdd)
TL_FETCH_S64(or, atomicOr)
TL_FETCH_S64(and, atomicAnd)
TL_FETCH_S64(xor, atomicXor)
#undef TL_FETCH_S64
// float max/min: no instruction, a compare-and-swap loop
#define TL_FETCH_MINMAX(T)                                                                         \
  TL_DEVICE T fetch_max(T* p, T v) { return atomic_update(p, [v](T o) { return tl::max(o, v); }); } \
  TL_DEVICE T fetch_min(T* p, T v) { return atomic_update(p, [v](T o) { return tl::min(o, v); }); }
TL_FETCH_MINMAX(float)
TL_FETCH_MINMAX(double)
TL_FETCH_MINMAX(half)
TL_FETCH_MINMAX(bfloat16_t)
#undef TL_FETCH_MINMAX

#define TL_ATOMIC_RMW(NAME, FETCH)                                                          \
  template <class T, class V> TL_DEVICE T NAME##Ret(T* p, V v, int order = 0) {             \
    order_before(order);                                                                  \
    const T r = FETCH(p, static_cast<T>(v));                                              \
    order_after(order);                                                                   \
    return r;                                                                             \
  }                                                                                       \
  template <class T, class V> TL_DEVICE void NAME(T* p, V v, int order = 0) {               \
    (void)NAME##Ret(p, v, order);                                                         \
  }
TL_ATOMIC_RMW(AtomicAdd, fetch_add)
TL_ATOMIC_RMW(AtomicMax, fetch_max)
TL_ATOMIC_RMW(AtomicMin, fetch_min)
TL_ATOMIC_RMW(AtomicOr, fetch_or)
TL_ATOMIC_RMW(AtomicAnd, fetch_and)
TL_ATOMIC_RMW(AtomicXor, fetch_xor)
#undef TL_ATOMIC_RMW

// Vector atomic adds (backend/cuda/vector_atomic.py): V consecutive elements, the first
// V * sizeof(T)-aligned. Each element is added atomically (PTX guarantees no more for
// vector atomics either). float2/float4 are one instruction on sm_90 (atom.global.v2/v4.f32,
// which returns the old values), one per element below; 16-bit pairs are one 32-bit
// atomic (half2 native; bfloat162 native on sm_90, a 32-bit compare-and-swap below),
// and 16-bit quads two pairs. The Ret forms return the previous values: float2/float4,
// half2/bfloat162 for a pair, and a quad as the two pairs' 32-bit words (uint2).
TL_DEVICE float2 AtomicAddx2Ret(float* p, float a, float b, int order = 0) {
  order_before(order);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const float2 r = atomicAdd(reinterpret_cast<float2*>(p), make_float2(a, b));
#else
  const float2 r = make_float2(atomicAdd(p, a), atomicAdd(p + 1, b));
#endif
  order_after(order);
  return r;
}
TL_DEVICE float4 AtomicAddx4Ret(float* p, float a, float b, float c, float d, int order = 0) {
  order_before(order);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const float4 r = atomicAdd(reinterpret_cast<float4*>(p), make_float4(a, b, c, d));
#else
  const float4 r = make_float4(atomicAdd(p, a), atomicAdd(p + 1, b), atomicAdd(p + 2, c), atomicAdd(p + 3, d));
#endif
  order_after(order);
  return r;
}
// a 16-bit pair as one 32-bit global atomic (`.global`: the generic atomicAdd(half2*) also
// handles shared memory, which costs a branch and an emulation loop); the value-unused form
// is a reduction (RED, fire-and-forget)
#define TL_PAIR_PTX(NAME, TYPE)                                                                   \
  TL_DEVICE unsigned atom_##NAME(void* p, unsigned v) {                                           \
    unsigned r;                                                                                   \
    asm volatile("atom.global.add.noftz." TYPE " %0, [%1], %2;" : "=r"(r) : "l"(p), "r"(v) : "memory"); \
    return r;                                                                                     \
  }                                                                                               \
  TL_DEVICE void red_##NAME(void* p, unsigned v) {                                                \
    asm volatile("red.global.add.noftz." TYPE " [%0], %1;" : : "l"(p), "r"(v) : "memory");        \
  }
TL_PAIR_PTX(f16x2, "f16x2")
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
TL_PAIR_PTX(bf16x2, "bf16x2")
#endif
#undef TL_PAIR_PTX

TL_DEVICE half2 AtomicAddx2Ret(half* p, half a, half b, int order = 0) {
  order_before(order);
  const half2 r = bitcast<half2>(atom_f16x2(p, bitcast<unsigned>(__halves2half2(a, b))));
  order_after(order);
  return r;
}
TL_DEVICE void AtomicAddx2(half* p, half a, half b, int order = 0) {
  order_before(order);
  red_f16x2(p, bitcast<unsigned>(__halves2half2(a, b)));
  order_after(order);
}
TL_DEVICE __nv_bfloat162 AtomicAddx2Ret(bfloat16_t* p, bfloat16_t a, bfloat16_t b, int order = 0) {
  order_before(order);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const __nv_bfloat162 r = bitcast<__nv_bfloat162>(atom_bf16x2(p, bitcast<unsigned>(__halves2bfloat162(a, b))));
#else   // cuda_bf16.h: a 32-bit compare-and-swap loop
  const __nv_bfloat162 r = atomicAdd(reinterpret_cast<__nv_bfloat162*>(p), __halves2bfloat162(a, b));
#endif
  order_after(order);
  return r;
}
TL_DEVICE void AtomicAddx2(bfloat16_t* p, bfloat16_t a, bfloat16_t b, int order = 0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  order_before(order);
  red_bf16x2(p, bitcast<unsigned>(__halves2bfloat162(a, b)));
  order_after(order);
#else
  (void)AtomicAddx2Ret(p, a, b, order);
#endif
}
template <class T> TL_DEVICE uint2 AtomicAddx4Ret(T* p, T a, T b, T c, T d, int order = 0) {
  static_assert(sizeof(T) == 2, "AtomicAddx4Ret: float or 16-bit elements");
  order_before(order);
  const uint2 r = make_uint2(bitcast<unsigned>(AtomicAddx2Ret(p, a, b)), bitcast<unsigned>(AtomicAddx2Ret(p + 2, c, d)));
  order_after(order);
  return r;
}
TL_DEVICE void AtomicAddx2(float* p, float a, float b, int order = 0) { (void)AtomicAddx2Ret(p, a, b, order); }
TL_DEVICE void AtomicAddx4(float* p, float a, float b, float c, float d, int order = 0) {
  (void)AtomicAddx4Ret(p, a, b, c, d, order);
}
template <class T> TL_DEVICE void AtomicAddx4(T* p, T a, T b, T c, T d, int order = 0) {
  static_assert(sizeof(T) == 2, "AtomicAddx4: float or 16-bit elements");
  order_before(order);
  AtomicAddx2(p, a, b);
  AtomicAddx2(p + 2, c, d);
  order_after(order);
}

// a 16-bit pair or quad result as the 32-/64-bit word it occupies (how the register
// tile receiving it is written: tl::store_lanes)
TL_DEVICE uint1 to_uint1(half2 v) { return make_uint1(bitcast<unsigned>(v)); }
TL_DEVICE uint1 to_uint1(__nv_bfloat162 v) { return make_uint1(bitcast<unsigned>(v)); }
TL_DEVICE uint2 to_uint2(uint2 v) { return v; }
// the lanes of a vector value to consecutive elements at `p` (any alignment: a register
// tile is not necessarily aligned to the vector, and registers do not care)
template <class T, class W> TL_DEVICE void store_lanes(T* p, W w) { memcpy(p, &w, sizeof(W)); }

// T.atomic_load / T.atomic_store: one aligned access the compiler may not cache or
// reorder (volatile), with the order's fences
template <class T> TL_DEVICE T AtomicLoad(const T* p, int order = 0) {
  using U = typename uint_bytes<sizeof(T)>::type;
  if (order == 5) __threadfence();
  const T r = bitcast<T>(*reinterpret_cast<const volatile U*>(p));
  order_after(order);
  return r;
}
template <class T, class V> TL_DEVICE void AtomicStore(T* p, V v, int order = 0) {
  using U = typename uint_bytes<sizeof(T)>::type;
  order_before(order);
  *reinterpret_cast<volatile U*>(p) = bitcast<U>(static_cast<T>(v));
  if (order == 5) __threadfence();
}

}  // namespace tl

using tl::AtomicAdd;
using tl::AtomicAddRet;
using tl::AtomicMax;
using tl::AtomicMaxRet;
using tl::AtomicMin;
using tl::AtomicMinRet;
using tl::AtomicOr;
using tl::AtomicOrRet;
using tl::AtomicAnd;
using tl::AtomicAndRet;
using tl::AtomicXor;
using tl::AtomicXorRet;
using tl::AtomicAddx2;
using tl::AtomicAddx2Ret;
using tl::AtomicAddx4;
using tl::AtomicAddx4Ret;
using tl::AtomicLoad;
using tl::AtomicStore;
