// Bulk tensor copies (TMA, sm_90) completing on mbarriers. A tensor map is
// encoded on the host (runtime.py, CU_TENSOR_MAP_SWIZZLE_128B) and passed by value
// as a `const __grid_constant__ tl::CUtensorMap` kernel parameter; one thread issues
// the copies, every consumer waits on the stage's "full" barrier and releases the
// stage on its "empty" barrier.
#pragma once
#include "common.h"

namespace tl {

// the driver's CUtensorMap (128 opaque bytes, 64-byte aligned; NVRTC has no cuda.h)
struct alignas(64) CUtensorMap {
  unsigned long long opaque[16];
};
using TmaDesc = CUtensorMap;

TL_DEVICE unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

TL_DEVICE void mbar_init(unsigned long long* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
TL_DEVICE void mbar_inval(unsigned long long* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// make the initialized barriers visible to the async proxy (the copy engine)
// (sm_80 has mbarriers but no async proxy: the block barrier after init suffices)
TL_DEVICE void mbar_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
TL_DEVICE void mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// this thread's arrival, announcing `bytes` of transactions (the copies that follow)
TL_DEVICE void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}
// one warp's release of a ring slot: an acquire-release add on the slot's counter;
// true for the arrival that completes a round of `n` (the counter only grows, so it
// needs no reset), whose thread has then seen every release of the round and may
// refill the slot at once instead of a producer thread waiting for it
TL_DEVICE bool slot_release_last(unsigned* count, unsigned n) {
  unsigned old;
  asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;\n" : "=r"(old) : "r"(smem_addr(count)) : "memory");
  return (old + 1) % n == 0;
}
// wait until the phase of parity `phase` has completed
TL_DEVICE void mbar_wait(unsigned long long* bar, unsigned phase) {
  const unsigned a = smem_addr(bar);
  unsigned done;
  do {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(a), "r"(phase)
                 : "memory");
#else
    asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(a), "r"(phase)
                 : "memory");
#endif
  } while (!done);
}

// whether the phase of parity `phase` has completed, without waiting
TL_DEVICE bool mbar_test(unsigned long long* bar, unsigned phase) {
  unsigned done;
  asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(smem_addr(bar)), "r"(phase)
               : "memory");
  return done != 0;
}

// announce `bytes` more of asynchronous copies completing on `bar` (no arrival)
TL_DEVICE void mbar_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}
// arrive on `bar` when this thread's earlier cp.async copies have landed; NOINC: the
// arrival counts toward the expected count (else the pending count is raised first)
template <bool NOINC> TL_DEVICE void cp_async_mbar_arrive(unsigned long long* bar) {
  if (NOINC) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
  } else {
    asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
  }
}
// setmaxnreg (sm_90a): the warpgroup's registers per thread grow or shrink to N
template <int N, bool INC> TL_DEVICE void set_max_nreg() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if (INC) {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
  } else {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
  }
#endif
}

TL_DEVICE void tma_prefetch_desc(const TmaDesc* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// the global box of a tensor map at the given coordinates into L2 only (no shared
// memory, no barrier): a later bulk load of the box finds it there
TL_DEVICE void tma_prefetch_l2(const TmaDesc* map, int c0, int c1) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n"
               ::"l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1) : "memory");
}
TL_DEVICE void tma_prefetch_l2(const TmaDesc* map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];\n"
               ::"l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
TL_DEVICE void tma_prefetch_l2(const TmaDesc* map, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\n"
               ::"l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
TL_DEVICE void tma_prefetch_l2(const TmaDesc* map, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.prefetch.tensor.5d.L2.global.tile [%0, {%1, %2, %3, %4, %5}];\n"
               ::"l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

// shared <- global box at (c0 = innermost coordinate, c1), completing on `bar`
TL_DEVICE void tma_load_2d(void* dst, const TmaDesc* map, unsigned long long* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
      ::"r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
      : "memory");
}

// a 1-D tensor map's box at c0
TL_DEVICE void tma_load_1d(void* dst, const TmaDesc* map, unsigned long long* bar, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];\n"
               ::"r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0)
               : "memory");
}

// `bytes` (a multiple of 16) of global memory at `src` -> shared at `dst` (both 16-byte
// aligned), one bulk copy without a tensor map, completing on `bar`
TL_DEVICE void tma_load_bulk(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(src)), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

// the same for 3- to 5-D tensor maps (coordinates innermost first; the boxes of the
// dimensions besides the tile's two have extent 1)
TL_DEVICE void tma_load_3d(void* dst, const TmaDesc* map, unsigned long long* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n"
      ::"r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1),
      "r"(c2)
      : "memory");
}
TL_DEVICE void tma_load_4d(void* dst, const TmaDesc* map, unsigned long long* bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\n"
      ::"r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1),
      "r"(c2), "r"(c3)
      : "memory");
}
TL_DEVICE void tma_load_5d(void* dst, const TmaDesc* map, unsigned long long* bar, int c0, int c1, int c2, int c3,
                           int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n"
      ::"r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1),
      "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

// the same box into the shared memory of every block of the cluster in `mask`, at
// `dst`'s offset, each completing on the mbarrier at `bar`'s offset in that block
TL_DEVICE void tma_load_2d_multicast(void* dst, const TmaDesc* map, unsigned long long* bar, int c0, int c1,
                                     unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;\n"
      ::"r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1),
      "h"(mask)
      : "memory");
}

// tma_load_{1..5}d's box into every block of the cluster in `mask` (T.tma_copy's
// cluster_mask): the same shared offset in each, completing on the mbarrier at `bar`'s
// offset in each, whose block announced the bytes itself
#define TL_TMA_LOAD_MULTICAST(DIM, COORDS, ...)                                                                   \
  asm volatile("cp.async.bulk.tensor." #DIM "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"          \
               ".multicast::cluster [%0], [%1, {" COORDS "}], [%2], %3;\n" ::"r"(smem_addr(dst)),                  \
               "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "h"(mask), __VA_ARGS__        \
               : "memory")
TL_DEVICE void tma_load_multicast(void* dst, const TmaDesc* map, unsigned long long* bar, unsigned short mask,
                                  int c0) {
  TL_TMA_LOAD_MULTICAST(1, "%4", "r"(c0));
}
TL_DEVICE void tma_load_multicast(void* dst, const TmaDesc* map, unsigned long long* bar, unsigned short mask,
                                  int c0, int c1) {
  TL_TMA_LOAD_MULTICAST(2, "%4, %5", "r"(c0), "r"(c1));
}
TL_DEVICE void tma_load_multicast(void* dst, const TmaDesc* map, unsigned long long* bar, unsigned short mask,
                                  int c0, int c1, int c2) {
  TL_TMA_LOAD_MULTICAST(3, "%4, %5, %6", "r"(c0), "r"(c1), "r"(c2));
}
TL_DEVICE void tma_load_multicast(void* dst, const TmaDesc* map, unsigned long long* bar, unsigned short mask,
                                  int c0, int c1, int c2, int c3) {
  TL_TMA_LOAD_MULTICAST(4, "%4, %5, %6, %7", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
TL_DEVICE void tma_load_multicast(void* dst, const TmaDesc* map, unsigned long long* bar, unsigned short mask,
                                  int c0, int c1, int c2, int c3, int c4) {
  TL_TMA_LOAD_MULTICAST(5, "%4, %5, %6, %7, %8", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}
#undef TL_TMA_LOAD_MULTICAST

// global += the shared box at `src` (a row-major tile, no swizzle), coordinates
// innermost first: one bulk tensor reduction in the type of `map`'s elements, in this
// thread's bulk group (tma_store_arrive / tma_store_wait complete it). sm_90+.
#define TL_TMA_STORE_ADD(DIM, COORDS, ...)                                                                  \
  asm volatile("cp.reduce.async.bulk.tensor." #DIM "d.global.shared::cta.add.tile.bulk_group [%0, {" COORDS \
               "}], [%1];\n" ::"l"(reinterpret_cast<unsigned long long>(map)),                               \
               "r"(smem_addr(src)), __VA_ARGS__                                                              \
               : "memory")
TL_DEVICE void tma_store_add(const TmaDesc* map, const void* src, int c0) { TL_TMA_STORE_ADD(1, "%2", "r"(c0)); }
TL_DEVICE void tma_store_add(const TmaDesc* map, const void* src, int c0, int c1) {
  TL_TMA_STORE_ADD(2, "%2, %3", "r"(c0), "r"(c1));
}
TL_DEVICE void tma_store_add(const TmaDesc* map, const void* src, int c0, int c1, int c2) {
  TL_TMA_STORE_ADD(3, "%2, %3, %4", "r"(c0), "r"(c1), "r"(c2));
}
TL_DEVICE void tma_store_add(const TmaDesc* map, const void* src, int c0, int c1, int c2, int c3) {
  TL_TMA_STORE_ADD(4, "%2, %3, %4, %5", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
TL_DEVICE void tma_store_add(const TmaDesc* map, const void* src, int c0, int c1, int c2, int c3, int c4) {
  TL_TMA_STORE_ADD(5, "%2, %3, %4, %5, %6", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}
#undef TL_TMA_STORE_ADD

// the shared box at `src` (row-major, no swizzle) -> global, coordinates innermost
// first; elements outside the tensor are not written. In this thread's bulk group.
#define TL_TMA_STORE(DIM, COORDS, ...)                                                                      \
  asm volatile("cp.async.bulk.tensor." #DIM "d.global.shared::cta.tile.bulk_group [%0, {" COORDS "}], [%1];\n" \
               ::"l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(src)), __VA_ARGS__           \
               : "memory")
TL_DEVICE void tma_store(const TmaDesc* map, const void* src, int c0) { TL_TMA_STORE(1, "%2", "r"(c0)); }
TL_DEVICE void tma_store(const TmaDesc* map, const void* src, int c0, int c1) {
  TL_TMA_STORE(2, "%2, %3", "r"(c0), "r"(c1));
}
TL_DEVICE void tma_store(const TmaDesc* map, const void* src, int c0, int c1, int c2) {
  TL_TMA_STORE(3, "%2, %3, %4", "r"(c0), "r"(c1), "r"(c2));
}
TL_DEVICE void tma_store(const TmaDesc* map, const void* src, int c0, int c1, int c2, int c3) {
  TL_TMA_STORE(4, "%2, %3, %4, %5", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
TL_DEVICE void tma_store(const TmaDesc* map, const void* src, int c0, int c1, int c2, int c3, int c4) {
  TL_TMA_STORE(5, "%2, %3, %4, %5, %6", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}
#undef TL_TMA_STORE

// after a bulk group's writes completed (tma_store_wait<N, false>): make them visible
// to generic-proxy accesses (the block's loads after the next barrier)
TL_DEVICE void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }

// `bytes` (a multiple of 16) of shared memory at `src` -> global at `dst` (both 16-byte
// aligned), one bulk copy without a tensor map, in this thread's bulk group
TL_DEVICE void tma_store_bulk(void* dst, const void* src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
               ::"l"(reinterpret_cast<unsigned long long>(dst)), "r"(smem_addr(src)), "r"(bytes)
               : "memory");
}

}  // namespace tl
