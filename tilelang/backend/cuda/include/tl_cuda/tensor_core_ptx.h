// Hand-written tensor-core code (language/tensor_core_ptx.py, warpgroup.py,
// descriptor.py): wgmma descriptors, the accumulator fence and ldmatrix into a
// thread's register array. The wgmma / mma.sync instructions themselves are inline
// asm written at the call (backend/cuda/tensor_core_ptx.py): their register lists
// depend on the shape.
#pragma once
#include "common.h"
#include "async.h"
#include "mma.h"
#include "wgmma.h"

namespace tl {

// the PTX matrix descriptor: start address >> 4 (bits 0-13), leading / stride byte
// offsets >> 4 (bits 16-29, 32-45), base offset 0, swizzle mode (bits 62-63)
TL_DEVICE void wgmma_desc_init(unsigned long long& d, const void* smem, int layout, int lbo16, int sbo16) {
  const unsigned addr = smem_u32(smem);
  d = (unsigned long long)((addr >> 4) & 0x3FFF) | ((unsigned long long)(lbo16 & 0x3FFF) << 16) |
      ((unsigned long long)(sbo16 & 0x3FFF) << 32) | ((unsigned long long)(layout & 3) << 62);
}

// the descriptor `off16` units of 16 bytes further (added to the low word, as published)
TL_DEVICE unsigned long long wgmma_desc_add(unsigned long long d, unsigned off16) {
  return (d & 0xFFFFFFFF00000000ull) | (unsigned)((unsigned)d + off16);
}

TL_DEVICE void wgmma_desc_advance(unsigned long long& d, int bytes) {
  d = wgmma_desc_add(d, (unsigned)(bytes >> 4));
}

// one 32-bit register of an operand array (any element type; no alignment assumed)
template <class T> TL_DEVICE unsigned reg32(const T* p) {
  unsigned r;
  memcpy(&r, p, 4);
  return r;
}

// keep the compiler from moving accumulator accesses across the asynchronous wgmma
template <int R> TL_DEVICE void warpgroup_fence_operand(float* p) { fence_regs<R>(p); }
template <int R> TL_DEVICE void warpgroup_fence_operand(int* p) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+r"(p[i])::"memory");
}
template <int R> TL_DEVICE void warpgroup_fence_operand(unsigned* p) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+r"(p[i])::"memory");
}
template <int R, class T> TL_DEVICE void warpgroup_fence_operand(T* p) {  // 16-bit: pairs
  warpgroup_fence_operand<R>(reinterpret_cast<unsigned*>(p));
}

// ldmatrix.m8n8.x{N}[.trans].b16: this lane gives the row address `src`, receives N registers
template <int N, bool TRANS> struct Ldmatrix;
template <> struct Ldmatrix<1, false> {
  TL_DEVICE static void run(unsigned* r, unsigned a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(a));
  }
};
template <> struct Ldmatrix<1, true> {
  TL_DEVICE static void run(unsigned* r, unsigned a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(a));
  }
};
template <> struct Ldmatrix<2, false> {
  TL_DEVICE static void run(unsigned* r, unsigned a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  }
};
template <> struct Ldmatrix<2, true> {
  TL_DEVICE static void run(unsigned* r, unsigned a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  }
};
template <> struct Ldmatrix<4, false> {
  TL_DEVICE static void run(unsigned* r, unsigned a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  }
};
template <> struct Ldmatrix<4, true> {
  TL_DEVICE static void run(unsigned* r, unsigned a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  }
};

template <int N, bool TRANS, class T> TL_DEVICE void ldmatrix_to(T* dst, const void* src) {
  unsigned r[N];
  Ldmatrix<N, TRANS>::run(r, smem_u32(src));
  memcpy(dst, r, 4 * N);
}

}  // namespace tl
