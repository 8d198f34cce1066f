// T.ldg*/T.stg*/T.lds*/T.sts* on the CPU: byte copies of 4 to 32 bytes (the GPU's
// explicit-width accesses). A false predicate skips the access; a skipped load gives zeros.
#pragma once
#include <cstdint>
#include <cstring>

namespace tl {

inline uint32_t ldg32(const void* p, bool pred) {
  uint32_t r = 0;
  if (pred) std::memcpy(&r, p, 4);
  return r;
}
inline void stg32(void* p, uint32_t v, bool pred) {
  if (pred) std::memcpy(p, &v, 4);
}
template <int Bytes> inline void ldg(void* dst, const void* src, bool pred) {
  if (pred) std::memcpy(dst, src, Bytes); else std::memset(dst, 0, Bytes);
}
template <int Bytes> inline void stg(void* dst, const void* src, bool pred) {
  if (pred) std::memcpy(dst, src, Bytes);
}
inline uint32_t lds32(const void* p) { return ldg32(p, true); }
inline void sts32(void* p, uint32_t v) { stg32(p, v, true); }
template <int Bytes> inline void lds(void* dst, const void* src) { std::memcpy(dst, src, Bytes); }
template <int Bytes> inline void sts(void* dst, const void* src) { std::memcpy(dst, src, Bytes); }

}  // namespace tl
