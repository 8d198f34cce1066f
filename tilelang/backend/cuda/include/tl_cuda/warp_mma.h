// Warp-level mma on per-thread register arrays (GEMMs written warp by warp, the
// published TensorCoreIntrinEmitter; backend/cuda/warp_mma_lowering.py). The arrays
// are plain T[] locals; each helper moves whole 32-bit registers in and out with
// memcpy (no alignment assumptions; nvcc keeps them in registers).
//
// WarpMma16n8<TAB, TC>::run(c, a, b): one m16n8kK mma.sync, K = 256 / bits(TAB):
//   a: the 16 x K A fragment (8 16-bit / 16 8-bit values), b: the K x 8 B fragment,
//   c: the 16 x 8 accumulator (4 values), all in the PTX ISA register order.
// (half accumulators: 2 registers holding the 4 values.)
#pragma once
#include "common.h"
#include "mma.h"

namespace tl {

template <class T> TL_DEVICE void ldmatrix_x4_to(T* dst, const T* src) {
  unsigned r[4];
  ldmatrix_x4(r, src);
  memcpy(dst, r, 16);
}

template <class T> TL_DEVICE void ldmatrix_x4_trans_to(T* dst, const T* src) {
  unsigned r[4];
  ldmatrix_x4_trans(r, src);
  memcpy(dst, r, 16);
}

template <class TAB, class TC> struct WarpMma16n8;

template <class TAB> struct WarpMma16n8F32 {
  TL_DEVICE static void run(float* c, const TAB* a, const TAB* b) {
    unsigned ra[4], rb[2];
    memcpy(ra, a, 16);
    memcpy(rb, b, 8);
    Mma16816<TAB>::run(c, ra, rb);
  }
};
template <> struct WarpMma16n8<half, float> : WarpMma16n8F32<half> {};
template <> struct WarpMma16n8<__nv_bfloat16, float> : WarpMma16n8F32<__nv_bfloat16> {};

template <> struct WarpMma16n8<half, half> {
  TL_DEVICE static void run(half* c, const half* a, const half* b) {
    unsigned ra[4], rb[2], rc[2];
    memcpy(ra, a, 16);
    memcpy(rb, b, 8);
    memcpy(rc, c, 8);
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};\n"
        : "+r"(rc[0]), "+r"(rc[1])
        : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    memcpy(c, rc, 8);
  }
};

// 8-bit inputs: m16n8k32 (s8/u8 -> s32, Mma16832; e4m3/e5m2 -> f32 on sm_89+, Fp8Mma in mma.h)
template <class TAB, class TC> struct WarpMma16n8K32 {
  TL_DEVICE static void run(TC* c, const TAB* a, const TAB* b) {
    unsigned ra[4], rb[2];
    memcpy(ra, a, 16);
    memcpy(rb, b, 8);
    Mma16832<TAB, TAB, TC>::run(c, ra, rb);
  }
};
template <> struct WarpMma16n8<signed char, int> : WarpMma16n8K32<signed char, int> {};
template <> struct WarpMma16n8<unsigned char, int> : WarpMma16n8K32<unsigned char, int> {};
template <class T> struct WarpMma16n8Fp8 {
  TL_DEVICE static void run(float* c, const T* a, const T* b) {
    unsigned ra[4], rb[2];
    memcpy(ra, a, 16);
    memcpy(rb, b, 8);
    Fp8Mma<T, T>::run(c, ra, rb);
  }
};
template <> struct WarpMma16n8<__nv_fp8_e4m3, float> : WarpMma16n8Fp8<__nv_fp8_e4m3> {};
template <> struct WarpMma16n8<__nv_fp8_e5m2, float> : WarpMma16n8Fp8<__nv_fp8_e5m2> {};

}  // namespace tl
