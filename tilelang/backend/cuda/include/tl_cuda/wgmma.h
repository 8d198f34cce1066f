// Warpgroup MMA for sm_90a: wgmma.mma_async m64nNk16 (fp16/bf16 in, fp32 accumulate) or
// m64nNk32 (fp8 e4m3 / e5m2, mixed too: both operands K-major, 32 bytes of K per instruction),
// operands in shared memory through swizzle descriptors (128B: sw128 in async.h; a
// K-major operand 32 or 16 columns wide: 64B / 32B, sw64 / sw32), or A in registers. Warpgroup g (threads 128g .. 128g+127) owns rows
// 64g .. 64g+63 of the block tile; its N/2 accumulator registers per thread follow
// MmaAccLayout<M, N, 4 * warpgroups, 1> (the mma.sync C pattern along N). The shared
// form also splits N among WGN warpgroups per 64-row slab (wgmma_ss_issue).
// The per-N instruction wrappers WgmmaSS / WgmmaRS are generated with the kernel.
#pragma once
#include "common.h"
#include "async.h"

#ifndef TL_WGMMA_UNIFORM_WG
#define TL_WGMMA_UNIFORM_WG 0
#endif

namespace tl {

template <int N, class T, int TA, int TB, class U = T> struct WgmmaSS;   // run(float* d, uint64 da, uint64 db); U: B's type
template <int N, class T, int TB> struct WgmmaRS;           // run(float* d, const unsigned* a, uint64 db)

// shared-memory matrix descriptor; `sw`: the swizzle in bytes (128, 64 or 32), whose
// layout-type field (bits 62-63) is 1, 2 or 3
TL_DEVICE unsigned long long wgmma_desc(const void* p, int lbo_bytes, int sbo_bytes, int sw = 128) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  unsigned long long d = (unsigned long long)((addr & 0x3FFFF) >> 4);
  d |= (unsigned long long)((lbo_bytes >> 4) & 0x3FFF) << 16;
  d |= (unsigned long long)((sbo_bytes >> 4) & 0x3FFF) << 32;
  d |= (unsigned long long)(sw == 128 ? 1 : sw == 64 ? 2 : 3) << 62;
  return d;
}

// the descriptor of the tile `bytes` (a multiple of 16) further on
TL_DEVICE unsigned long long desc_advance(unsigned long long d, int bytes) {
  return d + (unsigned long long)(bytes >> 4);
}

TL_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
TL_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> TL_DEVICE void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// keep register work ahead of the next wgmma wait: ptxas schedules wgmma.wait_group as an
// instruction with no inputs and hoists it above independent ALU work (an overlapped
// attention loop's softmax then ran after the P V group, not beside it: plan/overlap.py).
// A shared store may not cross the wait; this one is fed by `v` (values that depend on all
// of that work, e.g. the row sums) and predicated off at run time (the dynamic shared
// memory of a kernel with wgmma operands is never empty), so it only pins the schedule.
template <int R> TL_DEVICE void pin_before_wgmma_wait(const float* v) {
#pragma unroll
  for (int i = 0; i < R; ++i)
    asm volatile("{\n.reg .pred p;\n.reg .u32 n;\nmov.u32 n, %%dynamic_smem_size;\nsetp.eq.u32 p, n, 0;\n"
                 "@p st.shared.f32 [%1], %0;\n}\n" :: "f"(v[i]), "r"(0u) : "memory");
}

// keep the compiler from moving accumulator reads/writes across the async mma
template <int R> TL_DEVICE void fence_regs(float* d) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// A: [M][K] (TA=0, K-major) or [K][M] (TA=1); B: [N][K] (TB=1, K-major) or [K][N] (TB=0).
// Whole shared tiles in sw128 layout, 1024-byte aligned. M = 64 * (warpgroups / WGN):
// warpgroup g computes rows 64 (g % (M / 64)) .. + 63 and, with WGN > 1 warpgroups along
// N, columns (g / (M / 64)) * N / WGN .. + N / WGN - 1 (acc: N / WGN / 2 registers,
// MmaAccLayout<M, N, 4 M / 64, WGN, WGN > 1>).
// issue only (one commit group); wgmma_wait<n>() + fence_regs complete it
// SWA / SWB: the operands' swizzle in bytes. A K-major operand (A with TA=0, B with
// TB=1) whose K is 32 or 16 wide takes the 64B / 32B swizzle (sw64 / sw32: strips of
// SW / 2 columns, 8-row groups SW * 8 bytes apart); an MN-major one always has 128.
// The strips and steps count bytes: a swizzle strip holds SW / sizeof(T) columns and one
// instruction reads 32 bytes of K (16 16-bit or 32 fp8 elements); fp8 (1-byte T, U: B's
// type) is K-major only.
// S > 1: each warpgroup computes S 64-row slabs (M = 64 S warpgroups, K-major A, WGN = 1),
// one instruction per slab into registers s * N / 2 ..; A's rows are stored permuted
// (slab_row in async.h) so that slab s gives warp w the rows MmaAccLayout<M, N, 4 wg, 1>
// assigns to its s-th 16-row tile.
template <int M, int N, int K, bool TA, bool TB, class T, int WGN = 1, int SWA = 128, int SWB = 128, int S = 1,
          class U = T>
TL_DEVICE void wgmma_ss_issue(const T* A, const U* B, float* acc, int tid = thread_linear()) {
  constexpr int WGM = M / 64 / S, NW = N / WGN;
  static_assert(S == 1 || (!TA && WGN == 1), "several slabs per warpgroup: K-major A, warpgroups along M");
  static_assert(sizeof(T) == sizeof(U) && (sizeof(T) == 2 || (!TA && TB)), "fp8 wgmma: both operands K-major");
  constexpr int EA = SWA / (int)sizeof(T), EB = SWB / (int)sizeof(U);   // columns of one swizzle strip
  constexpr int KS = 32 / (int)sizeof(T);                                // K of one instruction
  static_assert(M % 64 == 0 && N % WGN == 0 && (TB || NW % 64 == 0), "wgmma_ss tile shape");
  static_assert((!TA || SWA == 128) && (TB || SWB == 128), "an MN-major wgmma operand takes the 128B swizzle");
  // the warpgroup index, broadcast from lane 0: ptxas then knows it is warp-uniform and
  // keeps the descriptors (and their per-step additions) in uniform registers, instead of
  // 64-bit vector adds and two R2UR before every wgmma (TL_WGMMA_UNIFORM_WG=0: tid >> 7)
#if TL_WGMMA_UNIFORM_WG
  const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
#else
  const int wg = tid >> 7;
#endif
  const int wm = WGN == 1 ? wg : wg % WGM, wn = WGN == 1 ? 0 : wg / WGM;
  // the descriptors of the warpgroup's first k step; later steps add their constant
  // offsets to the address field (14 bits of addr >> 4: shared memory < 256 KB never carries)
  const unsigned long long da0 = wgmma_desc(TA ? A + wm * (K * 64) : A + wm * S * 64 * EA, TA ? K * 128 : 16, 8 * SWA, SWA);
  const unsigned long long db0 = wgmma_desc(TB ? B + wn * NW * EB : B + wn * (NW / 64) * (K * 64), TB ? 16 : K * 128,
                                            8 * SWB, SWB);
  fence_regs<S * NW / 2>(acc);
  wgmma_fence();
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += KS) {
    const int oa = TA ? k0 * 64 : (k0 / EA) * (M * EA) + (k0 % EA);   // elements past the first step
    const int ob = TB ? (k0 / EB) * (N * EB) + (k0 % EB) : k0 * 64;
#pragma unroll
    for (int s = 0; s < S; ++s)
      WgmmaSS<NW, T, TA ? 1 : 0, TB ? 1 : 0, U>::run(acc + s * (NW / 2), desc_advance(da0, (oa + s * 64 * EA) * (int)sizeof(T)),
                                                      desc_advance(db0, ob * (int)sizeof(U)));
  }
  wgmma_commit();
}

template <int M, int N, int K, bool TA, bool TB, class T, int WGN = 1, int SWA = 128, int SWB = 128, int S = 1,
          class U = T>
TL_DEVICE void wgmma_gemm_ss(const T* A, const U* B, float* acc, int tid = thread_linear()) {
  wgmma_ss_issue<M, N, K, TA, TB, T, WGN, SWA, SWB, S, U>(A, B, acc, tid);
  wgmma_wait<0>();
  fence_regs<S * N / WGN / 2>(acc);
}

// the 16-bit patterns of two values as one register (reduce_pair.h's pack2 builds vector values)
template <class T> TL_DEVICE unsigned pack_bits2(T lo, T hi) {
  unsigned short l = *reinterpret_cast<unsigned short*>(&lo), h = *reinterpret_cast<unsigned short*>(&hi);
  return (unsigned)l | ((unsigned)h << 16);
}

// A from registers: `a` holds this thread's M x K fragment in MmaAccLayout<M, K, 4 wg / S, 1>.
// Issue and commit one group without waiting (the caller waits before it touches `a`
// or `acc` again; ptxas keeps the A registers the group reads intact until then).
// The A registers are all packed before the fence: packing inside the loop let ptxas
// place the packs between the wgmmas, and it then put a warpgroup.arrive (C7519)
// before every one of them. S > 1 slabs per warpgroup: slab s multiplies the fragment's
// s-th 16-row tile of each warp (registers s * K / 2 ..) into acc + s * N / 2, the rows
// MmaAccLayout gives both (A and the accumulator share the warp grid).
template <int M, int N, int K, bool TB, class T, int S = 1>
TL_DEVICE void wgmma_rs_issue(T* a, const T* B, float* acc, int /*tid: registers say it all*/ = 0) {
  unsigned ar[S][K / 16][4];
#pragma unroll
  for (int m = 0; m < S; ++m) {
#pragma unroll
    for (int s = 0; s < K / 16; ++s) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        ar[m][s][j] = pack_bits2(a[m * (K / 2) + s * 8 + 2 * j], a[m * (K / 2) + s * 8 + 2 * j + 1]);
        asm volatile("" : "+r"(ar[m][s][j])::"memory");
      }
    }
  }
  const unsigned long long db0 = wgmma_desc(B, TB ? 16 : K * 128, 1024);
  fence_regs<S * N / 2>(acc);
  wgmma_fence();
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    const int ob = TB ? (k0 >> 6) * (N * 64) + (k0 & 63) : k0 * 64;
#pragma unroll
    for (int m = 0; m < S; ++m)
      WgmmaRS<N, T, TB ? 1 : 0>::run(acc + m * (N / 2), ar[m][k0 >> 4], desc_advance(db0, ob * (int)sizeof(T)));
  }
  wgmma_commit();
}

template <int M, int N, int K, bool TB, class T, int S = 1>
TL_DEVICE void wgmma_gemm_rs(T* a, const T* B, float* acc, int tid = 0) {
  wgmma_rs_issue<M, N, K, TB, T, S>(a, B, acc, tid);
  wgmma_wait<0>();
  fence_regs<S * N / 2>(acc);
}

}  // namespace tl
