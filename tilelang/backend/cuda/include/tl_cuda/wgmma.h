// Warpgroup MMA for sm_90a: wgmma.mma_async m64nNk16 (fp16/bf16 in, fp32 accumulate),
// operands in shared memory through 128B-swizzle descriptors (layout of sw128 in
// async.h), or A in registers. Warpgroup g (threads 128g .. 128g+127) owns rows
// 64g .. 64g+63 of the block tile; its N/2 accumulator registers per thread follow
// MmaAccLayout<M, N, 4 * warpgroups, 1> (the mma.sync C pattern along N). The shared
// form also splits N among WGN warpgroups per 64-row slab (wgmma_ss_issue).
// The per-N instruction wrappers WgmmaSS / WgmmaRS are generated with the kernel.
#pragma once
#include "common.h"
#include "async.h"

namespace tl {

template <int N, class T, int TA, int TB> struct WgmmaSS;   // run(float* d, uint64 da, uint64 db)
template <int N, class T, int TB> struct WgmmaRS;           // run(float* d, const unsigned* a, uint64 db)

// shared-memory matrix descriptor, 128-byte swizzle
TL_DEVICE unsigned long long wgmma_desc(const void* p, int lbo_bytes, int sbo_bytes) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  unsigned long long d = (unsigned long long)((addr & 0x3FFFF) >> 4);
  d |= (unsigned long long)((lbo_bytes >> 4) & 0x3FFF) << 16;
  d |= (unsigned long long)((sbo_bytes >> 4) & 0x3FFF) << 32;
  d |= 1ull << 62;
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
template <int M, int N, int K, bool TA, bool TB, class T, int WGN = 1>
TL_DEVICE void wgmma_ss_issue(const T* A, const T* B, float* acc, int tid = thread_linear()) {
  constexpr int WGM = M / 64, NW = N / WGN;
  static_assert(M % 64 == 0 && N % WGN == 0 && (TB || NW % 64 == 0), "wgmma_ss tile shape");
  const int wg = tid >> 7;
  const int wm = WGN == 1 ? wg : wg % WGM, wn = WGN == 1 ? 0 : wg / WGM;
  // the descriptors of the warpgroup's first k step; later steps add their constant
  // offsets to the address field (14 bits of addr >> 4: shared memory < 256 KB never carries)
  const unsigned long long da0 = wgmma_desc(TA ? A + wm * (K * 64) : A + wm * 64 * 64, TA ? K * 128 : 16, 1024);
  const unsigned long long db0 = wgmma_desc(TB ? B + wn * NW * 64 : B + wn * (NW / 64) * (K * 64), TB ? 16 : K * 128, 1024);
  fence_regs<NW / 2>(acc);
  wgmma_fence();
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    const int oa = TA ? k0 * 64 : (k0 >> 6) * (M * 64) + (k0 & 63);   // elements past the first step
    const int ob = TB ? (k0 >> 6) * (N * 64) + (k0 & 63) : k0 * 64;
    WgmmaSS<NW, T, TA ? 1 : 0, TB ? 1 : 0>::run(acc, desc_advance(da0, oa * (int)sizeof(T)),
                                                 desc_advance(db0, ob * (int)sizeof(T)));
  }
  wgmma_commit();
}

template <int M, int N, int K, bool TA, bool TB, class T, int WGN = 1>
TL_DEVICE void wgmma_gemm_ss(const T* A, const T* B, float* acc, int tid = thread_linear()) {
  wgmma_ss_issue<M, N, K, TA, TB, T, WGN>(A, B, acc, tid);
  wgmma_wait<0>();
  fence_regs<N / WGN / 2>(acc);
}

// the 16-bit patterns of two values as one register (reduce_pair.h's pack2 builds vector values)
template <class T> TL_DEVICE unsigned pack_bits2(T lo, T hi) {
  unsigned short l = *reinterpret_cast<unsigned short*>(&lo), h = *reinterpret_cast<unsigned short*>(&hi);
  return (unsigned)l | ((unsigned)h << 16);
}

// A from registers: `a` holds this thread's M x K fragment in MmaAccLayout<M, K, 4 wg, 1>.
// Issue and commit one group without waiting (the caller waits before it touches `a`
// or `acc` again; ptxas keeps the A registers the group reads intact until then).
// The A registers are all packed before the fence: packing inside the loop let ptxas
// place the packs between the wgmmas, and it then put a warpgroup.arrive (C7519)
// before every one of them.
template <int M, int N, int K, bool TB, class T>
TL_DEVICE void wgmma_rs_issue(T* a, const T* B, float* acc, int /*tid: registers say it all*/ = 0) {
  unsigned ar[K / 16][4];
#pragma unroll
  for (int s = 0; s < K / 16; ++s) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      ar[s][j] = pack_bits2(a[s * 8 + 2 * j], a[s * 8 + 2 * j + 1]);
      asm volatile("" : "+r"(ar[s][j])::"memory");
    }
  }
  const unsigned long long db0 = wgmma_desc(B, TB ? 16 : K * 128, 1024);
  fence_regs<N / 2>(acc);
  wgmma_fence();
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    const int ob = TB ? (k0 >> 6) * (N * 64) + (k0 & 63) : k0 * 64;
    WgmmaRS<N, T, TB ? 1 : 0>::run(acc, ar[k0 >> 4], desc_advance(db0, ob * (int)sizeof(T)));
  }
  wgmma_commit();
}

template <int M, int N, int K, bool TB, class T>
TL_DEVICE void wgmma_gemm_rs(T* a, const T* B, float* acc, int tid = 0) {
  wgmma_rs_issue<M, N, K, TB, T>(a, B, acc, tid);
  wgmma_wait<0>();
  fence_regs<N / 2>(acc);
}

}  // namespace tl
