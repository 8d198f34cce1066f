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

// across aligned groups of G consecutive lanes (G a power of two <= 32): log2(G) shuffles,
// every lane of a group ending with the group's result
template <int G, class Op, class T> TL_DEVICE T group_reduce(T v, Op op) {
#pragma unroll
  for (int m = G / 2; m > 0; m >>= 1) v = op(v, shfl_xor(v, m));
  return v;
}

// B rows at once (T.reduce_*(..., batch=B), B a power of two <= 32): lane l holds a partial
// v[i] of each row i. Each of the first log2(B) butterfly levels halves the rows a lane
// keeps (it sends the half its partner keeps), so B - 1 shuffles do the work of B
// butterflies of log2(B) levels; the remaining levels combine one value. Returns the
// complete result of row `row` (set here) in every lane; lanes l with
// l % (32 / B) == 0 hold the B rows once each.
template <int B, class Op, class T> TL_DEVICE T warp_reduce_rows(T (&v)[B], Op op, int lane, int& row) {
  row = 0;
  int n = B;
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    if (n > 1) {
      const int half = n / 2;
      const bool upper = (lane & m) != 0;
      if (upper) row += half;
#pragma unroll
      for (int i = 0; i < B / 2; ++i) {
        if (i < half) {
          const T keep = upper ? v[i + half] : v[i];
          const T send = upper ? v[i] : v[i + half];
          v[i] = op(keep, shfl_xor(send, m));
        }
      }
      n = half;
    } else {
      v[0] = op(v[0], shfl_xor(v[0], m));
    }
  }
  return v[0];
}

// B rows over aligned groups of G consecutive lanes (B <= G <= 32, powers of two), every
// lane ending with all B results: the halving butterfly above over the group (B - 1 +
// log2(G / B) shuffles; lane l then holds one row), then its levels undone in reverse
// to gather the rows back (B - 1 shuffles): 2 (B - 1) + log2(G / B) shuffles instead
// of B log2(G). v[i] is row i's partial on entry and its result on return.
template <int B, int G, class Op, class T> TL_DEVICE void group_allreduce_rows(T (&v)[B], Op op, int lane) {
  int n = B;
#pragma unroll
  for (int m = G / 2; m > 0; m >>= 1) {
    if (n > 1) {
      const int half = n / 2;
      const bool upper = (lane & m) != 0;
#pragma unroll
      for (int i = 0; i < B / 2; ++i) {
        if (i < half) {
          const T keep = upper ? v[i + half] : v[i];
          const T send = upper ? v[i] : v[i + half];
          v[i] = op(keep, shfl_xor(send, m));
        }
      }
      n = half;
    } else {
      v[0] = op(v[0], shfl_xor(v[0], m));
    }
  }
  int held = 1;   // the lane holds rows [base, base + held) in v[0, held)
#pragma unroll
  for (int m = G / B; m < G; m <<= 1) {
    const bool upper = (lane & m) != 0;
#pragma unroll
    for (int i = B / 2 - 1; i >= 0; --i) {
      if (i < held) {
        const T other = shfl_xor(v[i], m);
        v[i + held] = upper ? v[i] : other;
        v[i] = upper ? other : v[i];
      }
    }
    held <<= 1;
  }
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
