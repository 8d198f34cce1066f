// Tensor-core GEMM for sm_80+: ldmatrix from shared memory, mma.sync m16n8k16
// (fp16/bf16 in, fp32 accumulate). A block tile M x N is split over WM x WN warps;
// each warp owns a (M/WM) x (N/WN) tile made of 16x8 mma atoms, whose accumulators
// live in registers in the order given by MmaAccLayout (the fragment layout that
// T.Parallel loops over the accumulator follow).
#pragma once
#include "common.h"

namespace tl {

TL_DEVICE unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

TL_DEVICE void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

TL_DEVICE void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

template <class T, class TC = float> struct Mma16816;

TL_DEVICE unsigned pack_half2(half lo, half hi) {
  return (unsigned)__half_as_ushort(lo) | ((unsigned)__half_as_ushort(hi) << 16);
}
TL_DEVICE half low_half(unsigned v) { return __ushort_as_half((unsigned short)(v & 0xFFFFu)); }
TL_DEVICE half high_half(unsigned v) { return __ushort_as_half((unsigned short)(v >> 16)); }

// float16 accumulators (T.gemm into a float16 fragment): d holds C0..C3 as the f32 form
// does; the instruction takes them as two f16x2 registers and rounds once per k16 step
template <> struct Mma16816<half, half> {
  TL_DEVICE static void run(half* d, const unsigned* a, const unsigned* b) {
    unsigned c0 = pack_half2(d[0], d[1]), c1 = pack_half2(d[2], d[3]);
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};\n"
        : "+r"(c0), "+r"(c1)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    d[0] = low_half(c0); d[1] = high_half(c0);
    d[2] = low_half(c1); d[3] = high_half(c1);
  }
};

template <> struct Mma16816<half> {
  TL_DEVICE static void run(float* d, const unsigned* a, const unsigned* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

template <> struct Mma16816<__nv_bfloat16> {
  TL_DEVICE static void run(float* d, const unsigned* a, const unsigned* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

// m16n8k32 for 8-bit integer operands (A: 4 registers of 4 bytes, B: 2, C: 4 values); fp8 is
// Fp8Mma below.
template <class TA, class TB, class TC> struct Mma16832;
#define TL_MMA_16832(TA, TB, TC, PTX, CREG)                                                             \
  template <> struct Mma16832<TA, TB, TC> {                                                            \
    TL_DEVICE static void run(TC* d, const unsigned* a, const unsigned* b) {                           \
      asm volatile("mma.sync.aligned.m16n8k32.row.col." PTX                                            \
                   " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                \
                   : "+" CREG(d[0]), "+" CREG(d[1]), "+" CREG(d[2]), "+" CREG(d[3])                    \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                \
    }                                                                                                  \
  };
TL_MMA_16832(signed char, signed char, int, "s32.s8.s8.s32", "r")
TL_MMA_16832(unsigned char, unsigned char, int, "s32.u8.u8.s32", "r")
#undef TL_MMA_16832

// WGC (warpgroup MMA with its warpgroups along N): warp w sits at row w % WM and column
// w / WM of the warp grid (each warpgroup's 4 warps share a column); otherwise at row
// w / WN and column w % WN.
template <int M, int N, int WM, int WN, bool WGC = false> struct MmaAccLayout {
  static constexpr int WTM = M / WM, WTN = N / WN, MI = WTM / 16, NI = WTN / 8;
  static constexpr int REGS = MI * NI * 4;
  TL_DEVICE static int warp_row(int tid) { return WGC ? (tid >> 5) % WM : (tid >> 5) / WN; }
  TL_DEVICE static int warp_col(int tid) { return WGC ? (tid >> 5) / WM : (tid >> 5) % WN; }
  // register r of thread tid holds C[row(tid, r), col(tid, r)]
  TL_DEVICE static int row(int tid, int r) {
    int lane = tid & 31, wr = warp_row(tid), mi = (r >> 2) / NI;
    return wr * WTM + mi * 16 + (lane >> 2) + ((r >> 1) & 1) * 8;
  }
  TL_DEVICE static int col(int tid, int r) {
    int lane = tid & 31, wc = warp_col(tid), ni = (r >> 2) % NI;
    return wc * WTN + ni * 8 + (lane & 3) * 2 + (r & 1);
  }
  // slot of MmaRowLayout<M, WM, WN, WGC> holding row(tid, r)
  TL_DEVICE static constexpr int row_slot(int r) { return ((r >> 2) / NI) * 2 + ((r >> 1) & 1); }
  // slot of MmaColLayout<N, WM, WN, WGC> holding col(tid, r)
  TL_DEVICE static constexpr int col_slot(int r) { return ((r >> 2) % NI) * 2 + (r & 1); }
  // first column, within the warp's WTN columns, of the 8-column strip that register r lies in
  TL_DEVICE static constexpr int strip_col(int r) { return ((r >> 2) % NI) * 8; }
};

// A length-M vector of per-row values of an MmaAccLayout<M, N, WM, WN, WGC> tile: each
// thread holds the SLOTS rows it owns, replicated over the 4 lanes of its quad and
// over the WN warps that share its rows.
template <int M, int WM, int WN = 1, bool WGC = false> struct MmaRowLayout {
  static constexpr int WTM = M / WM, MI = WTM / 16, SLOTS = MI * 2;
  TL_DEVICE static int row(int tid, int s) {
    return (WGC ? (tid >> 5) % WM : (tid >> 5) / WN) * WTM + (s >> 1) * 16 + ((tid & 31) >> 2) + (s & 1) * 8;
  }
};

// A length-N vector of per-column values of an MmaAccLayout<M, N, WM, WN, WGC> tile: each
// thread holds the SLOTS columns it owns, replicated over the 8 lane rows of its warp and
// over the WM warps that share its columns.
template <int N, int WM, int WN = 1, bool WGC = false> struct MmaColLayout {
  static constexpr int WTN = N / WN, NI = WTN / 8, SLOTS = NI * 2;
  TL_DEVICE static int col(int tid, int s) {
    return (WGC ? (tid >> 5) / WM : (tid >> 5) % WN) * WTN + (s >> 1) * 8 + (tid & 3) * 2 + (s & 1);
  }
};

// Element (r, c) of a 16-bit shared tile, c a multiple of 8 (one 16-byte ldmatrix row):
// SW = 0 row-major with row stride `ld`; SW = 128 / 64 / 32 the swizzled layouts of
// wgmma's operands (tl::sw128 / sw64 / sw32 in async.h), `ld` then the elements between
// two column strips (rows * SW / 2). So an mma.sync gemm reads a tile a wgmma gemm of the
// same kernel also reads (FlashAttention backward: K as wgmma A and as mma B).
template <int SW> TL_DEVICE int tile_offset(int r, int c, int ld) {
  if constexpr (SW == 0) {
    return r * ld + c;
  } else {
    constexpr int W = SW / 2;                            // elements per strip row
    constexpr int S = SW == 128 ? 0 : SW == 64 ? 1 : 2;  // rows sharing one XOR pattern: 1 << S
    return (c / W) * ld + r * W + ((((c >> 3) ^ (r >> S)) & (W / 8 - 1)) << 3) + (c & 7);
  }
}

// tile_offset(r0 + r, c0 + c, ld) for a thread's own part (r, c) of an ldmatrix row
// address, t = tile_offset(r, c, ld), c < 16 and c % 8 == 0, and a step (r0, c0) known
// when compiling with r0 % 8 == 0 and c0 % 16 == 0: the step keeps the row's XOR pattern,
// moves within the strip by an XOR of the 16-byte chunk bits (the thread's chunk is 0 or
// 1, the step's even: no carry) and adds whole rows and strips. So each address is the
// thread's base XOR a constant plus a constant, one LOP3 and an immediate offset,
// instead of a swizzle per address that ptxas hoists out of the loop into registers
// (the sparse MLA backward spilled 72 words when its dKV gemm read Q this way).
template <int SW> TL_DEVICE int tile_step(int t, int r0, int c0, int ld) {
  if constexpr (SW == 0) {
    return t + r0 * ld + c0;
  } else {
    constexpr int W = SW / 2;
    return (t ^ (c0 & (W - 8))) + (c0 / W) * ld + r0 * W;
  }
}

// A lane's part of its ldmatrix row addresses into B (K x N, or N x K when TB) for the
// x4 loads of mma_b_frags; tile_step adds the steps.
template <bool TB, int SWB> TL_DEVICE int mma_b_lane_offset(int lane, int ldb) {
  return !TB ? tile_offset<SWB>(((lane >> 3) & 1) * 8 + (lane & 7), (lane >> 4) * 8, ldb)
             : tile_offset<SWB>((lane >> 4) * 8 + (lane & 7), ((lane >> 3) & 1) * 8, ldb);
}

// The m16n8k16 B operands of a warp's NI 8-column tiles at K step k0 (two tiles an ldmatrix.x4).
template <class L, bool TB, int SWB, class T>
TL_DEVICE void mma_b_frags(unsigned (&b)[L::NI][2], const T* B, int tb, int k0, int wc, int ldb) {
#pragma unroll
  for (int nj = 0; nj < L::NI / 2; ++nj) {
    const int n0 = wc * L::WTN + nj * 16;
    unsigned r[4];
    if (!TB) {
      ldmatrix_x4_trans(r, B + tile_step<SWB>(tb, k0, n0, ldb));
    } else {
      ldmatrix_x4(r, B + tile_step<SWB>(tb, n0, k0, ldb));
    }
    b[2 * nj][0] = r[0]; b[2 * nj][1] = r[1];
    b[2 * nj + 1][0] = r[2]; b[2 * nj + 1][1] = r[3];
  }
}

// C[M, N] += A[M, K] * B[K, N]; A is stored K x M when TA, B is stored N x K when TB.
// lda/ldb are the shared-memory row strides in elements (multiples of 8), or for a
// swizzled operand (SWA / SWB bytes) its strip stride (tile_offset).
template <int M, int N, int K, int WM, int WN, bool TA, bool TB, int SWA = 0, int SWB = 0, class T, class TC>
TL_DEVICE void gemm_ss(const T* A, int lda, const T* B, int ldb, TC* acc, int tid = thread_linear()) {
  using L = MmaAccLayout<M, N, WM, WN>;
  static_assert(L::WTM % 16 == 0 && L::WTN % 16 == 0 && K % 16 == 0, "gemm_ss tile shape");
  const int lane = tid & 31;
  const int wr = (tid >> 5) / WN, wc = (tid >> 5) % WN;
  // each lane's part of its ldmatrix row addresses (tile_step adds the steps)
  const int ta = !TA ? tile_offset<SWA>(lane & 15, (lane >> 4) * 8, lda)
                     : tile_offset<SWA>((lane >> 4) * 8 + (lane & 7), ((lane >> 3) & 1) * 8, lda);
  const int tb = mma_b_lane_offset<TB, SWB>(lane, ldb);
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    unsigned a[L::MI][4];
    unsigned b[L::NI][2];
#pragma unroll
    for (int mi = 0; mi < L::MI; ++mi) {
      const int m0 = wr * L::WTM + mi * 16;
      if (!TA) {
        ldmatrix_x4(a[mi], A + tile_step<SWA>(ta, m0, k0, lda));
      } else {
        ldmatrix_x4_trans(a[mi], A + tile_step<SWA>(ta, k0, m0, lda));
      }
    }
    mma_b_frags<L, TB, SWB>(b, B, tb, k0, wc, ldb);
#pragma unroll
    for (int mi = 0; mi < L::MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < L::NI; ++ni) Mma16816<T, TC>::run(acc + (mi * L::NI + ni) * 4, a[mi], b[ni]);
  }
}

// C[M, N] += A[M, K] * B[K, N] with A in registers: the 16-bit fragment `a_regs` in the
// accumulator pattern of an M x K tile on a WM x 1 warp grid (MmaAccLayout<M, K, WM, 1>, as
// a gemm's accumulator cast to 16 bits leaves it: FlashAttention's P). Two adjacent 8-column
// strips of that pattern are one m16n8k16 A operand (a0 / a1 rows g / g + 8 of the first,
// a2 / a3 of the second), so register pair (mi, 2 kk) .. (mi, 2 kk + 1) is read as it is.
template <int M, int N, int K, int WM, int WN, bool TB, int SWB = 0, class T, class TC>
TL_DEVICE void gemm_rs(const T* a_regs, const T* B, int ldb, TC* acc, int tid = thread_linear()) {
  using L = MmaAccLayout<M, N, WM, WN>;
  using LA = MmaAccLayout<M, K, WM, 1>;
  static_assert(WN == 1, "gemm_rs: each warp holds all K columns of its rows of A");
  static_assert(L::WTM % 16 == 0 && L::WTN % 16 == 0 && K % 16 == 0, "gemm_rs tile shape");
  const int lane = tid & 31;
  const int wc = (tid >> 5) % WN;
  const unsigned* a = reinterpret_cast<const unsigned*>(a_regs);
  const int tb = mma_b_lane_offset<TB, SWB>(lane, ldb);
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    unsigned b[L::NI][2];
    mma_b_frags<L, TB, SWB>(b, B, tb, k0, wc, ldb);
#pragma unroll
    for (int mi = 0; mi < L::MI; ++mi) {
      const unsigned* am = a + (mi * LA::NI + k0 / 8) * 2;
      unsigned af[4] = {am[0], am[1], am[2], am[3]};
#pragma unroll
      for (int ni = 0; ni < L::NI; ++ni) Mma16816<T, TC>::run(acc + (mi * L::NI + ni) * 4, af, b[ni]);
    }
  }
}

// fp8 m16n8k32 as two fp16 m16n8k16 (Hopper has no fp8 mma.sync unit; this is what
// the instruction costs there anyway, with the conversions placed by us): bytes 0-1 of
// an 8-bit register hold K 4t, 4t+1 and bytes 2-3 K 4t+2, 4t+3; taken as fp16 K
// positions 2t, 2t+1 and 2t+8, 2t+9 in both A and B, each product pairs the same K.
template <class T> TL_DEVICE unsigned fp8x2_to_f16x2(unsigned short v);
template <> TL_DEVICE unsigned fp8x2_to_f16x2<__nv_fp8_e4m3>(unsigned short v) {
  unsigned r;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(r) : "h"(v));
  return r;
}
template <> TL_DEVICE unsigned fp8x2_to_f16x2<__nv_fp8_e5m2>(unsigned short v) {
  unsigned r;
  asm("cvt.rn.f16x2.e5m2x2 %0, %1;\n" : "=r"(r) : "h"(v));
  return r;
}
template <class TA, class TB> struct Fp8Mma {
  TL_DEVICE static void run(float* d, const unsigned* a, const unsigned* b) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {   // K 0-15, then 16-31
      const unsigned a0 = a[2 * h], a1 = a[2 * h + 1], b0 = b[h];
      unsigned fa[4] = {fp8x2_to_f16x2<TA>(a0 & 0xFFFF), fp8x2_to_f16x2<TA>(a1 & 0xFFFF),
                        fp8x2_to_f16x2<TA>(a0 >> 16), fp8x2_to_f16x2<TA>(a1 >> 16)};
      unsigned fb[2] = {fp8x2_to_f16x2<TB>(b0 & 0xFFFF), fp8x2_to_f16x2<TB>(b0 >> 16)};
      Mma16816<half>::run(d, fa, fb);
    }
  }
};

// one m16n8k32 step of 8-bit operands: fp8 through fp16 (Fp8Mma), int8/uint8 natively
// (s32 accumulators)
template <class TA, class TB, class TC> struct Mma8Bit {
  TL_DEVICE static void run(TC* d, const unsigned* a, const unsigned* b) { Fp8Mma<TA, TB>::run(d, a, b); }
};
template <> struct Mma8Bit<signed char, signed char, int> : Mma16832<signed char, signed char, int> {};
template <> struct Mma8Bit<unsigned char, unsigned char, int> : Mma16832<unsigned char, unsigned char, int> {};

// The same for 8-bit operands (fp8 e4m3 / e5m2, int8, uint8): m16n8k32, A stored M x K
// and B stored N x K (ldmatrix moves 8-bit data only untransposed); one 16-byte row piece
// is 16 elements, so the second K half of each matrix sits 16 columns further. The
// ldmatrix fragments are the mma.m16n8k32 integer operand layout as they are.
template <int M, int N, int K, int WM, int WN, class TA, class TB, class TC>
TL_DEVICE void gemm_ss_k32(const TA* A, int lda, const TB* B, int ldb, TC* acc, int tid = thread_linear()) {
  using L = MmaAccLayout<M, N, WM, WN>;
  static_assert(L::WTM % 16 == 0 && L::WTN % 16 == 0 && K % 32 == 0, "gemm_ss_k32 tile shape");
  const int lane = tid & 31;
  const int wr = (tid >> 5) / WN, wc = (tid >> 5) % WN;
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 32) {
    unsigned a[L::MI][4];
    unsigned b[L::NI][2];
#pragma unroll
    for (int mi = 0; mi < L::MI; ++mi)
      ldmatrix_x4(a[mi], A + (wr * L::WTM + mi * 16 + (lane & 15)) * lda + k0 + (lane >> 4) * 16);
#pragma unroll
    for (int nj = 0; nj < L::NI / 2; ++nj) {
      unsigned r[4];
      ldmatrix_x4(r, B + (wc * L::WTN + nj * 16 + (lane >> 4) * 8 + (lane & 7)) * ldb + k0 + ((lane >> 3) & 1) * 16);
      b[2 * nj][0] = r[0]; b[2 * nj][1] = r[1];
      b[2 * nj + 1][0] = r[2]; b[2 * nj + 1][1] = r[3];
    }
#pragma unroll
    for (int mi = 0; mi < L::MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < L::NI; ++ni) Mma8Bit<TA, TB, TC>::run(acc + (mi * L::NI + ni) * 4, a[mi], b[ni]);
  }
}

// TF32 (float32 / tfloat32 operands, float32 accumulators): mma.sync m16n8k8 .tf32, one
// 32-bit register per element. The tensor core uses the top 19 bits of each operand
// (tf32_trunc in common.h). Register order (PTX ISA, g = lane / 4, t = lane % 4):
//   A 16 x 8: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
//   B 8 x 8:  b0 (k t, n g), b1 (k t + 4, n g)
// ldmatrix moves 8 x 8 matrices of 16-bit units: lane l receives the 32-bit word at row
// l / 4, word l % 4 of a matrix whose 8 rows are 16-byte (4-float) pieces, which is the
// tf32 fragment order above for a K-major operand (A stored M x K, B stored N x K).
// ldmatrix .trans would swap 16-bit halves, so an M/N-major operand (A stored K x M,
// B stored K x N) is read one 32-bit element per register instead.
struct MmaTf32 {
  TL_DEVICE static void run(float* d, const unsigned* a, const unsigned* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

// one 32-bit element of shared memory (through the shared window: 32-bit addresses, like ldmatrix)
TL_DEVICE unsigned lds_u32(const float* p) {
  unsigned r;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(r) : "r"(smem_u32(p)));
  return r;
}

// C[M, N] += A[M, K] * B[K, N] on 32-bit float operands in shared memory (A stored K x M
// when TA, B stored N x K when TB; lda/ldb row strides in elements, multiples of 4).
// The .tf32 B operands of one k8 step of warp column wc: N x K tiles (TB) by ldmatrix,
// K x N tiles one 32-bit word per element (shared by gemm_ss_tf32 and gemm_rs_tf32).
template <class L, bool TB>
TL_DEVICE void load_b_tf32(unsigned (*b)[2], const float* B, int ldb, int k0, int lane, int wc) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nj = 0; nj < L::NI / 2; ++nj) {
    const int n0 = wc * L::WTN + nj * 16;
    if (TB) {
      unsigned r[4];
      ldmatrix_x4(r, B + (n0 + (lane >> 4) * 8 + (lane & 7)) * ldb + k0 + ((lane >> 3) & 1) * 4);
      b[2 * nj][0] = r[0]; b[2 * nj][1] = r[1];
      b[2 * nj + 1][0] = r[2]; b[2 * nj + 1][1] = r[3];
    } else {
      const float* p = B + (k0 + t) * ldb + n0 + g;
      b[2 * nj][0] = lds_u32(p);
      b[2 * nj][1] = lds_u32(p + 4 * ldb);
      b[2 * nj + 1][0] = lds_u32(p + 8);
      b[2 * nj + 1][1] = lds_u32(p + 4 * ldb + 8);
    }
  }
}

// CHAINS > 1 (ops/mma.py MmaTf32Config.chains): k8 step ki accumulates into chain ki % CHAINS,
// chain 0 the accumulator itself, the others zeroed registers added to it at the end, so that
// a warp with few MMAs a step has CHAINS times as many independent ones in flight (a single
// warp per scheduler otherwise waits out the MMA latency once per k8 step).
template <int CHAINS, int REGS>
struct Tf32Chains {
  float part[CHAINS > 1 ? (CHAINS - 1) * REGS : 1];
  TL_DEVICE Tf32Chains() {
#pragma unroll
    for (int i = 0; i < (CHAINS > 1 ? (CHAINS - 1) * REGS : 0); ++i) part[i] = 0.0f;
  }
  TL_DEVICE float* of(float* acc, int ki) { return ki % CHAINS == 0 ? acc : part + (ki % CHAINS - 1) * REGS; }
  TL_DEVICE void sum_into(float* acc) {
#pragma unroll
    for (int c = 1; c < CHAINS; ++c)
#pragma unroll
      for (int i = 0; i < REGS; ++i) acc[i] += part[(c - 1) * REGS + i];
  }
};

template <int M, int N, int K, int WM, int WN, bool TA, bool TB, int CHAINS = 1>
TL_DEVICE void gemm_ss_tf32(const float* A, int lda, const float* B, int ldb, float* acc, int tid = thread_linear()) {
  using L = MmaAccLayout<M, N, WM, WN>;
  static_assert(L::WTM % 16 == 0 && L::WTN % 16 == 0 && K % 8 == 0, "gemm_ss_tf32 tile shape");
  const int lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wr = (tid >> 5) / WN, wc = (tid >> 5) % WN;
  Tf32Chains<CHAINS, L::MI * L::NI * 4> chains;
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 8) {
    float* d = chains.of(acc, k0 / 8);
    unsigned a[L::MI][4];
    unsigned b[L::NI][2];
#pragma unroll
    for (int mi = 0; mi < L::MI; ++mi) {
      const int m0 = wr * L::WTM + mi * 16;
      if (!TA) {
        ldmatrix_x4(a[mi], A + (m0 + (lane & 15)) * lda + k0 + (lane >> 4) * 4);
      } else {
        const float* p = A + (k0 + t) * lda + m0 + g;
        a[mi][0] = lds_u32(p);
        a[mi][1] = lds_u32(p + 8);
        a[mi][2] = lds_u32(p + 4 * lda);
        a[mi][3] = lds_u32(p + 4 * lda + 8);
      }
    }
    load_b_tf32<L, TB>(b, B, ldb, k0, lane, wc);
#pragma unroll
    for (int mi = 0; mi < L::MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < L::NI; ++ni) MmaTf32::run(d + (mi * L::NI + ni) * 4, a[mi], b[ni]);
  }
  chains.sum_into(acc);
}

// The register A operand of gemm_rs_tf32: an M x K tile over a WM x WN warp grid, warp
// w at grid row w / WN holding its M / WM rows and all K columns (the WN warps of a row
// hold copies). Register (mi * K / 8 + ki) * 4 + a holds the m16n8k8 .tf32 A element a of
// atom (mi, ki): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4).
template <int M, int K, int WM, int WN> struct MmaTf32ALayout {
  static constexpr int WTM = M / WM, MI = WTM / 16, KI = K / 8, REGS = MI * KI * 4;
  TL_DEVICE static int row(int tid, int r) {
    return ((tid >> 5) / WN) * WTM + ((r >> 2) / KI) * 16 + ((tid & 31) >> 2) + (r & 1) * 8;
  }
  TL_DEVICE static int col(int tid, int r) { return ((r >> 2) % KI) * 8 + (tid & 3) + ((r >> 1) & 1) * 4; }
};

// An M x 4 tile on the threads of MmaTf32ALayout<M, K, WM, WN>: element (i, j) on lane
// (i % 8) * 4 + j of the warps at grid row i / WTM, slot (i % WTM) / 16 * 2 + i % 16 / 8
// (the rows of MmaRowLayout<M, WM, WN>): column j of a row is column t of every k8 atom.
template <int M, int WM, int WN> struct MmaTf32ColsLayout {
  static constexpr int WTM = M / WM, MI = WTM / 16, REGS = MI * 2;
  TL_DEVICE static int row(int tid, int s) {
    return ((tid >> 5) / WN) * WTM + (s >> 1) * 16 + ((tid & 31) >> 2) + (s & 1) * 8;
  }
  TL_DEVICE static int col(int tid, int s) { return tid & 3; }
  TL_DEVICE static constexpr int row_slot(int s) { return s; }
};

// C[M, N] += A[M, K] * B[K, N] with A in registers (MmaTf32ALayout<M, K, WM, WN>, raw
// 32-bit float bits: the tensor core reads their top 19) and B in shared memory (stored
// N x K when TB, ldb its row stride in elements, a multiple of 4).
template <int M, int N, int K, int WM, int WN, bool TB, int CHAINS = 1>
TL_DEVICE void gemm_rs_tf32(const float* a_regs, const float* B, int ldb, float* acc, int tid = thread_linear()) {
  using L = MmaAccLayout<M, N, WM, WN>;
  static_assert(L::WTM % 16 == 0 && L::WTN % 16 == 0 && K % 8 == 0, "gemm_rs_tf32 tile shape");
  constexpr int KI = K / 8;
  const int lane = tid & 31;
  const int wc = (tid >> 5) % WN;
  Tf32Chains<CHAINS, L::MI * L::NI * 4> chains;
#pragma unroll
  for (int ki = 0; ki < KI; ++ki) {
    const int k0 = ki * 8;
    float* d = chains.of(acc, ki);
    unsigned b[L::NI][2];
    load_b_tf32<L, TB>(b, B, ldb, k0, lane, wc);
#pragma unroll
    for (int mi = 0; mi < L::MI; ++mi) {
      const unsigned* a = reinterpret_cast<const unsigned*>(a_regs) + (mi * KI + ki) * 4;
#pragma unroll
      for (int ni = 0; ni < L::NI; ++ni) MmaTf32::run(d + (mi * L::NI + ni) * 4, a, b[ni]);
    }
  }
  chains.sum_into(acc);
}

}  // namespace tl
