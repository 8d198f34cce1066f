// Asynchronous copies (cp.async, sm_80+) with commit/wait groups, the proxy fence
// that orders ordinary shared-memory writes before tensor-core (async proxy) reads,
// and the 128-byte swizzle that wgmma descriptors and bank-conflict-free 16-byte
// accesses share.
#pragma once
#include "common.h"

namespace tl {

// shared <- global, N bytes (4, 8 or 16); zero-filled when !pred (no bytes are read)
template <int N> TL_DEVICE void cp_async(void* smem, const void* gmem, bool pred) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async moves 4, 8 or 16 bytes");
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_size = pred ? N : 0;
  if constexpr (N == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_size)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(gmem), "n"(N), "r"(src_size)
                 : "memory");
  }
}

// the published TileLang's names (backend/cuda/cp_async_spelling.py)
template <int N> TL_DEVICE void cp_async_gs(void* smem, const void* gmem) { cp_async<N>(smem, gmem, true); }
template <int N> TL_DEVICE void cp_async_gs_conditional(void* smem, const void* gmem, bool pred) {
  cp_async<N>(smem, gmem, pred);
}

TL_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N> TL_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// T.ptx_cp_async: a copy this thread has finished when the call returns (the
// compiler orders it with other threads' reads by data flow, as any store)
template <int N> TL_DEVICE void cp_async_now(void* smem, const void* gmem, bool pred) {
  cp_async<N>(smem, gmem, pred);
  cp_async_commit();
  cp_async_wait<0>();
}

// generic-proxy shared-memory writes (st.shared, cp.async) become visible to the
// async proxy (wgmma operand reads); each writing thread runs it before the barrier
// Bulk (TMA) stores complete in groups: close this thread's group, wait until at most N
// groups are pending (with Read, until their shared sources have been read).
TL_DEVICE void tma_store_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}

template <int N, bool Read>
TL_DEVICE void tma_store_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (Read) {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
  } else {
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
  }
#endif
}

TL_DEVICE void fence_proxy_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Element offset of (r, c) in an R-row, 16-bit tile stored as 64-column strips
// (each strip R x 128 bytes), 16-byte chunks XOR-swizzled by (row % 8): the
// layout of CU_TENSOR_MAP_SWIZZLE_128B and of wgmma's 128B-swizzle descriptors.
// EB = 1: the same bytes for a 1-byte (fp8) tile, whose strips are 128 columns wide.
template <int R, int EB = 2> TL_DEVICE int sw128(int r, int c) {
  if constexpr (EB == 1) return (c >> 7) * (R * 128) + r * 128 + ((((c >> 4) ^ r) & 7) << 4) + (c & 15);
  return (c >> 6) * (R * 64) + r * 64 + ((((c >> 3) ^ r) & 7) << 3) + (c & 7);
}
// The narrower swizzles, for tiles whose rows are 32 or 16 elements wide (a 32-wide K
// tile): 32- (16-) column strips of R x 64 (32) bytes; the 16-byte chunk index is XORed
// with (row / 2) % 4 (sw64) or (row / 4) % 2 (sw32). The layouts of wgmma's 64B / 32B
// swizzle descriptors and of CU_TENSOR_MAP_SWIZZLE_64B / _32B. EB = 1: fp8 tiles, whose
// strips are 64 (32) columns wide.
template <int R, int EB = 2> TL_DEVICE int sw64(int r, int c) {
  if constexpr (EB == 1) return (c >> 6) * (R * 64) + r * 64 + ((((c >> 4) ^ (r >> 1)) & 3) << 4) + (c & 15);
  return (c >> 5) * (R * 32) + r * 32 + ((((c >> 3) ^ (r >> 1)) & 3) << 3) + (c & 7);
}
template <int R, int EB = 2> TL_DEVICE int sw32(int r, int c) {
  if constexpr (EB == 1) return (c >> 5) * (R * 32) + r * 32 + ((((c >> 4) ^ (r >> 2)) & 1) << 4) + (c & 15);
  return (c >> 4) * (R * 16) + r * 16 + ((((c >> 3) ^ (r >> 2)) & 1) << 3) + (c & 7);
}

// The stored row of row r of a wgmma A tile whose warpgroups compute S 64-row slabs
// each (wgmma_ss_issue's S): the accumulator gives warp w (of all the block's warps)
// rows 16 (w S + s) .. + 15 in its s-th 16-row tile; the instruction for slab s of
// warpgroup w / 4 reads its rows 16 (w % 4) .. + 15. S = 1: r itself.
template <int S> TL_DEVICE int slab_row(int r) {
  const int t = r >> 4, w = t / S, s = t % S;
  return ((w >> 2) * S + s) * 64 + (w & 3) * 16 + (r & 15);
}

}  // namespace tl
