// Warp-level reductions (butterfly shuffles): every lane gets the result.
#pragma once
#include "common.h"
#include "reduce_pair.h"

namespace tl {

struct SumOp { template <class T> TL_DEVICE T operator()(T a, T b) const { return a + b; } };
struct MaxOp { template <class T> TL_DEVICE T operator()(T a, T b) const { return tl::max(a, b); } };
struct MinOp { template <class T> TL_DEVICE T operator()(T a, T b) const { return tl::min(a, b); } };
struct MaxOpNan { template <class T> TL_DEVICE T operator()(T a, T b) const { return tl::max_nan(a, b); } };
struct MinOpNan { template <class T> TL_DEVICE T operator()(T a, T b) const { return tl::min_nan(a, b); } };
struct BitAndOp { template <class T> TL_DEVICE T operator()(T a, T b) const { return a & b; } };
struct BitOrOp { template <class T> TL_DEVICE T operator()(T a, T b) const { return a | b; } };
struct BitXorOp { template <class T> TL_DEVICE T operator()(T a, T b) const { return a ^ b; } };

template <class T> TL_DEVICE T shfl_xor(T v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }

template <class Op, class T> TL_DEVICE T warp_reduce(T v, Op op) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v = op(v, shfl_xor(v, m));
  return v;
}

// T.match_all_sync: the mask when every lane agrees, else 0 (the predicate is dropped)
template <class T> TL_DEVICE unsigned match_all(unsigned mask, T v) {
  int pred;
  return __match_all_sync(mask, v, &pred);
}

// across the 4 lanes of a quad (the lanes that share a row of an mma accumulator)
template <class Op, class T> TL_DEVICE T quad_reduce(T v, Op op) {
  v = op(v, shfl_xor(v, 1));
  return op(v, shfl_xor(v, 2));
}

}  // namespace tl
