// T.ldg*/T.stg* (global) and T.lds*/T.sts* (shared): explicit-width accesses of raw
// 32-bit words. Global ones are predicated in PTX (a false predicate skips the access;
// a skipped load yields zeros); all are `volatile` so that the compiler keeps them in
// program order with the barriers around them. 256-bit accesses are two 128-bit ones
// (ld.global.v8 needs sm_100). Addresses must be aligned to the access width.
#pragma once
#include "common.h"
#include "tma.h"   // smem_addr

namespace tl {

TL_DEVICE unsigned ldg32(const void* p, bool pred) {
  unsigned r = 0u;
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n @p ld.global.b32 %0, [%1];\n}\n"
               : "+r"(r) : "l"(p), "r"((int)pred));
  return r;
}

TL_DEVICE void stg32(void* p, unsigned v, bool pred) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n @p st.global.b32 [%0], %1;\n}\n"
               :: "l"(p), "r"(v), "r"((int)pred) : "memory");
}

template <int Bytes> TL_DEVICE void ldg(void* dst, const void* src, bool pred);
template <int Bytes> TL_DEVICE void stg(void* dst, const void* src, bool pred);

template <> TL_DEVICE void ldg<8>(void* dst, const void* src, bool pred) {
  uint2 r = make_uint2(0u, 0u);
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %3, 0;\n @p ld.global.v2.b32 {%0, %1}, [%2];\n}\n"
               : "+r"(r.x), "+r"(r.y) : "l"(src), "r"((int)pred));
  *reinterpret_cast<uint2*>(dst) = r;
}

template <> TL_DEVICE void ldg<16>(void* dst, const void* src, bool pred) {
  uint4 r = make_uint4(0u, 0u, 0u, 0u);
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"
               " @p ld.global.v4.b32 {%0, %1, %2, %3}, [%4];\n}\n"
               : "+r"(r.x), "+r"(r.y), "+r"(r.z), "+r"(r.w) : "l"(src), "r"((int)pred));
  *reinterpret_cast<uint4*>(dst) = r;
}

template <> TL_DEVICE void ldg<32>(void* dst, const void* src, bool pred) {
  ldg<16>(dst, src, pred);
  ldg<16>(static_cast<char*>(dst) + 16, static_cast<const char*>(src) + 16, pred);
}

template <> TL_DEVICE void stg<8>(void* dst, const void* src, bool pred) {
  uint2 v = *reinterpret_cast<const uint2*>(src);
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %3, 0;\n @p st.global.v2.b32 [%0], {%1, %2};\n}\n"
               :: "l"(dst), "r"(v.x), "r"(v.y), "r"((int)pred) : "memory");
}

template <> TL_DEVICE void stg<16>(void* dst, const void* src, bool pred) {
  uint4 v = *reinterpret_cast<const uint4*>(src);
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"
               " @p st.global.v4.b32 [%0], {%1, %2, %3, %4};\n}\n"
               :: "l"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"((int)pred) : "memory");
}

template <> TL_DEVICE void stg<32>(void* dst, const void* src, bool pred) {
  stg<16>(dst, src, pred);
  stg<16>(static_cast<char*>(dst) + 16, static_cast<const char*>(src) + 16, pred);
}

TL_DEVICE unsigned lds32(const void* p) {
  unsigned r;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(r) : "r"(smem_addr(p)));
  return r;
}

TL_DEVICE void sts32(void* p, unsigned v) {
  asm volatile("st.shared.b32 [%0], %1;\n" :: "r"(smem_addr(p)), "r"(v) : "memory");
}

template <int Bytes> TL_DEVICE void lds(void* dst, const void* src);
template <int Bytes> TL_DEVICE void sts(void* dst, const void* src);

template <> TL_DEVICE void lds<8>(void* dst, const void* src) {
  uint2 r;
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(r.x), "=r"(r.y) : "r"(smem_addr(src)));
  *reinterpret_cast<uint2*>(dst) = r;
}

template <> TL_DEVICE void lds<16>(void* dst, const void* src) {
  uint4 r;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(smem_addr(src)));
  *reinterpret_cast<uint4*>(dst) = r;
}

template <> TL_DEVICE void sts<8>(void* dst, const void* src) {
  uint2 v = *reinterpret_cast<const uint2*>(src);
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" :: "r"(smem_addr(dst)), "r"(v.x), "r"(v.y) : "memory");
}

template <> TL_DEVICE void sts<16>(void* dst, const void* src) {
  uint4 v = *reinterpret_cast<const uint4*>(src);
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n"
               :: "r"(smem_addr(dst)), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// The names kernels call, by direction, memory and width (the `_conditional` forms take
// the predicate; the others always access)
TL_DEVICE unsigned load_global_32(const void* p) { return ldg32(p, true); }
TL_DEVICE unsigned load_global_32_conditional(const void* p, bool pred) { return ldg32(p, pred); }
TL_DEVICE void store_global_32(void* p, unsigned v) { stg32(p, v, true); }
TL_DEVICE void store_global_32_conditional(void* p, unsigned v, bool pred) { stg32(p, v, pred); }
TL_DEVICE unsigned load_shared_32(const void* p) { return lds32(p); }
TL_DEVICE void store_shared_32(void* p, unsigned v) { sts32(p, v); }
#define TL_WIDE_GLOBAL(BITS)                                                                            \
  TL_DEVICE void load_global_##BITS(void* d, const void* s) { ldg<BITS / 8>(d, s, true); }              \
  TL_DEVICE void load_global_##BITS##_conditional(void* d, const void* s, bool p) { ldg<BITS / 8>(d, s, p); } \
  TL_DEVICE void store_global_##BITS(void* d, const void* s) { stg<BITS / 8>(d, s, true); }             \
  TL_DEVICE void store_global_##BITS##_conditional(void* d, const void* s, bool p) { stg<BITS / 8>(d, s, p); }
TL_WIDE_GLOBAL(64)
TL_WIDE_GLOBAL(128)
TL_WIDE_GLOBAL(256)
#undef TL_WIDE_GLOBAL
#define TL_WIDE_SHARED(BITS)                                                                      \
  TL_DEVICE void load_shared_##BITS(void* d, const void* s) { lds<BITS / 8>(d, s); }             \
  TL_DEVICE void store_shared_##BITS(void* d, const void* s) { sts<BITS / 8>(d, s); }
TL_WIDE_SHARED(64)
TL_WIDE_SHARED(128)
#undef TL_WIDE_SHARED

}  // namespace tl
