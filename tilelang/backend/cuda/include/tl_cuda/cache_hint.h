// L2 eviction priorities of T.copy(..., eviction_policy=...) (backend/cuda/plan/copy_forms.py):
// an L2 cache policy made by `createpolicy` (sm_80+) travels with the copy's global loads
// and stores (`.L2::cache_hint`) and with its cp.async copies. P: 0 evict_normal,
// 1 evict_first, 2 evict_last (the published numbering).
#pragma once
#include "common.h"
#include "tma.h"   // smem_addr, TmaDesc

namespace tl {

template <int P> TL_DEVICE unsigned long long l2_policy() {
  static_assert(P >= 0 && P <= 2, "eviction policy: 0 evict_normal, 1 evict_first, 2 evict_last");
  unsigned long long pol;
  if constexpr (P == 1) {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  } else if constexpr (P == 2) {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(pol));
  } else {
    asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(pol));
  }
  return pol;
}

// one global load of a T (1, 2, 4, 8 or 16 bytes, aligned to its size) with policy P
template <typename T, int P> TL_DEVICE T ld_global_hint(const T* p) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16,
                "ld_global_hint moves 1, 2, 4, 8 or 16 bytes");
  const unsigned long long pol = l2_policy<P>();
  T out;
  if constexpr (sizeof(T) == 16) {
    uint4 r;
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(pol));
    *reinterpret_cast<uint4*>(&out) = r;
  } else if constexpr (sizeof(T) == 8) {
    uint2 r;
    asm volatile("ld.global.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;\n" : "=r"(r.x), "=r"(r.y) : "l"(p), "l"(pol));
    *reinterpret_cast<uint2*>(&out) = r;
  } else if constexpr (sizeof(T) == 4) {
    unsigned r;
    asm volatile("ld.global.L2::cache_hint.u32 %0, [%1], %2;\n" : "=r"(r) : "l"(p), "l"(pol));
    *reinterpret_cast<unsigned*>(&out) = r;
  } else if constexpr (sizeof(T) == 2) {
    unsigned short r;
    asm volatile("ld.global.L2::cache_hint.u16 %0, [%1], %2;\n" : "=h"(r) : "l"(p), "l"(pol));
    *reinterpret_cast<unsigned short*>(&out) = r;
  } else {
    unsigned short r;
    asm volatile("ld.global.L2::cache_hint.u8 %0, [%1], %2;\n" : "=h"(r) : "l"(p), "l"(pol));
    *reinterpret_cast<unsigned char*>(&out) = static_cast<unsigned char>(r);
  }
  return out;
}

// one global store of a T with policy P
template <typename T, int P> TL_DEVICE void st_global_hint(T* p, const T& v) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16,
                "st_global_hint moves 1, 2, 4, 8 or 16 bytes");
  const unsigned long long pol = l2_policy<P>();
  if constexpr (sizeof(T) == 16) {
    const uint4 r = *reinterpret_cast<const uint4*>(&v);
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;\n"
                 :: "l"(p), "r"(r.x), "r"(r.y), "r"(r.z), "r"(r.w), "l"(pol) : "memory");
  } else if constexpr (sizeof(T) == 8) {
    const uint2 r = *reinterpret_cast<const uint2*>(&v);
    asm volatile("st.global.L2::cache_hint.v2.u32 [%0], {%1, %2}, %3;\n" :: "l"(p), "r"(r.x), "r"(r.y), "l"(pol)
                 : "memory");
  } else if constexpr (sizeof(T) == 4) {
    asm volatile("st.global.L2::cache_hint.u32 [%0], %1, %2;\n"
                 :: "l"(p), "r"(*reinterpret_cast<const unsigned*>(&v)), "l"(pol) : "memory");
  } else if constexpr (sizeof(T) == 2) {
    asm volatile("st.global.L2::cache_hint.u16 [%0], %1, %2;\n"
                 :: "l"(p), "h"(*reinterpret_cast<const unsigned short*>(&v)), "l"(pol) : "memory");
  } else {
    asm volatile("st.global.L2::cache_hint.u8 [%0], %1, %2;\n"
                 :: "l"(p), "h"((unsigned short)*reinterpret_cast<const unsigned char*>(&v)), "l"(pol) : "memory");
  }
}

// cp.async (shared <- global, N = 4, 8 or 16 bytes) with policy P; zero-fills when !pred
template <int N, int P> TL_DEVICE void cp_async_hint(void* smem, const void* gmem, bool pred) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async moves 4, 8 or 16 bytes");
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_size = pred ? N : 0;
  const unsigned long long pol = l2_policy<P>();
  if constexpr (N == 16) {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n"
                 ::"r"(s), "l"(gmem), "r"(src_size), "l"(pol) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], %2, %3, %4;\n"
                 ::"r"(s), "l"(gmem), "n"(N), "r"(src_size), "l"(pol) : "memory");
  }
}

// tma.h's whole-tile bulk copies with policy P (.L2::cache_hint): a tensor-map box
// (coordinates innermost first) or a contiguous run, loaded on `bar` or stored in this
// thread's bulk group
#define TL_TMA_LOAD_HINT(DIM, COORDS, ...)                                                                      \
  asm volatile("cp.async.bulk.tensor." #DIM "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"        \
               ".L2::cache_hint [%0], [%1, {" COORDS "}], [%2], %3;\n"                                          \
               ::"r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)),      \
               "l"(l2_policy<P>()), __VA_ARGS__                                                                 \
               : "memory")
template <int P> TL_DEVICE void tma_load_hint(void* dst, const TmaDesc* map, unsigned long long* bar, int c0) {
  TL_TMA_LOAD_HINT(1, "%4", "r"(c0));
}
template <int P>
TL_DEVICE void tma_load_hint(void* dst, const TmaDesc* map, unsigned long long* bar, int c0, int c1) {
  TL_TMA_LOAD_HINT(2, "%4, %5", "r"(c0), "r"(c1));
}
template <int P>
TL_DEVICE void tma_load_hint(void* dst, const TmaDesc* map, unsigned long long* bar, int c0, int c1, int c2) {
  TL_TMA_LOAD_HINT(3, "%4, %5, %6", "r"(c0), "r"(c1), "r"(c2));
}
template <int P>
TL_DEVICE void tma_load_hint(void* dst, const TmaDesc* map, unsigned long long* bar, int c0, int c1, int c2, int c3) {
  TL_TMA_LOAD_HINT(4, "%4, %5, %6, %7", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
template <int P>
TL_DEVICE void tma_load_hint(void* dst, const TmaDesc* map, unsigned long long* bar, int c0, int c1, int c2, int c3,
                             int c4) {
  TL_TMA_LOAD_HINT(5, "%4, %5, %6, %7, %8", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}
#undef TL_TMA_LOAD_HINT

template <int P>
TL_DEVICE void tma_load_bulk_hint(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
               " [%0], [%1], %2, [%3], %4;\n"
               ::"r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(src)), "r"(bytes), "r"(smem_addr(bar)),
               "l"(l2_policy<P>())
               : "memory");
}

#define TL_TMA_STORE_HINT(DIM, COORDS, ...)                                                                     \
  asm volatile("cp.async.bulk.tensor." #DIM "d.global.shared::cta.tile.bulk_group.L2::cache_hint"              \
               " [%0, {" COORDS "}], [%1], %2;\n"                                                              \
               ::"l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(src)), "l"(l2_policy<P>()),      \
               __VA_ARGS__                                                                                      \
               : "memory")
template <int P> TL_DEVICE void tma_store_hint(const TmaDesc* map, const void* src, int c0) {
  TL_TMA_STORE_HINT(1, "%3", "r"(c0));
}
template <int P> TL_DEVICE void tma_store_hint(const TmaDesc* map, const void* src, int c0, int c1) {
  TL_TMA_STORE_HINT(2, "%3, %4", "r"(c0), "r"(c1));
}
template <int P> TL_DEVICE void tma_store_hint(const TmaDesc* map, const void* src, int c0, int c1, int c2) {
  TL_TMA_STORE_HINT(3, "%3, %4, %5", "r"(c0), "r"(c1), "r"(c2));
}
template <int P> TL_DEVICE void tma_store_hint(const TmaDesc* map, const void* src, int c0, int c1, int c2, int c3) {
  TL_TMA_STORE_HINT(4, "%3, %4, %5, %6", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
template <int P>
TL_DEVICE void tma_store_hint(const TmaDesc* map, const void* src, int c0, int c1, int c2, int c3, int c4) {
  TL_TMA_STORE_HINT(5, "%3, %4, %5, %6, %7", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}
#undef TL_TMA_STORE_HINT

template <int P> TL_DEVICE void tma_store_bulk_hint(void* dst, const void* src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;\n"
               ::"l"(reinterpret_cast<unsigned long long>(dst)), "r"(smem_addr(src)), "r"(bytes), "l"(l2_policy<P>())
               : "memory");
}

}  // namespace tl
