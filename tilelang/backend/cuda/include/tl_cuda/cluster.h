// Thread-block clusters (sm_90): the cluster barrier, the block's rank in its
// cluster, and distributed shared memory (a block reaching the shared memory of
// another block of its cluster through `mapa` addresses in the shared::cluster
// window). The cluster shape is fixed in the kernel's source (`__cluster_dims__`).
// Every function here is executed by each thread that reaches it; the barrier
// ones by all threads of the block (`.aligned`).
#pragma once
#include "common.h"
#include "tma.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TL_CLUSTER_PTX 1
#endif

namespace tl {

// barrier.cluster: arrive (release) / arrive without ordering memory / wait (acquire)
TL_DEVICE void cluster_arrive() {
#ifdef TL_CLUSTER_PTX
  asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory");
#endif
}
TL_DEVICE void cluster_arrive_relaxed() {
#ifdef TL_CLUSTER_PTX
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
}
TL_DEVICE void cluster_wait() {
#ifdef TL_CLUSTER_PTX
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
#endif
}
TL_DEVICE void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

// %cluster_ctarank: 0 .. blocks per cluster - 1 (0 without clusters)
TL_DEVICE int block_rank_in_cluster() {
#ifdef TL_CLUSTER_PTX
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return static_cast<int>(r);
#else
  return 0;
#endif
}

// the shared::cluster address of `p` (this block's shared memory) in block `rank`
TL_DEVICE unsigned cluster_smem_addr(const void* p, int rank) {
  unsigned out = smem_addr(p);
#ifdef TL_CLUSTER_PTX
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(out), "r"(rank));
#endif
  return out;
}

// one arrival on the mbarrier at `bar`'s offset in block `rank` of the cluster,
// releasing this thread's earlier writes (its stores to that block's shared memory
// included) at cluster scope
TL_DEVICE void mbar_arrive_cluster(unsigned long long* bar, int rank) {
#ifdef TL_CLUSTER_PTX
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_smem_addr(bar, rank))
               : "memory");
#else
  mbar_arrive(bar);
#endif
}

// one arrival on the mbarrier at `bar`'s offset in block `rank`, ordering nothing at cluster
// scope: the release of a TMA ring slot whose readers are done (the wgmma group that read it
// was waited for), as CUTLASS's ClusterBarrier::arrive(cta_id). The cluster-scope release of
// mbar_arrive_cluster costs a MEMBAR.ALL.GPU per arrival in the GEMM loop.
TL_DEVICE void mbar_arrive_cluster_slot(unsigned long long* bar, int rank) {
#ifdef TL_CLUSTER_PTX
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_smem_addr(bar, rank)) : "memory");
#else
  mbar_arrive(bar);
#endif
}

// T.mbarrier_wait_parity on a cluster barrier: acquire at cluster scope, so that
// what other blocks released with their arrivals is visible afterwards
TL_DEVICE void mbar_wait_cluster(unsigned long long* bar, unsigned phase) {
#ifdef TL_CLUSTER_PTX
  const unsigned a = smem_addr(bar);
  unsigned done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(a), "r"(phase) : "memory");
  } while (!done);
#else
  mbar_wait(bar, phase);
#endif
}

// element store into block `rank`'s copy of a shared buffer (T.copy_cluster, SIMT form)
template <class T> TL_DEVICE void st_cluster(T* dst, int rank, T v) {
#ifdef TL_CLUSTER_PTX
  const unsigned a = cluster_smem_addr(dst, rank);
  if constexpr (sizeof(T) == 1) {
    asm volatile("st.shared::cluster.u8 [%0], %1;\n" ::"r"(a), "h"((unsigned short)bitcast<unsigned char>(v))
                 : "memory");
  } else if constexpr (sizeof(T) == 2) {
    asm volatile("st.shared::cluster.u16 [%0], %1;\n" ::"r"(a), "h"(bitcast<unsigned short>(v)) : "memory");
  } else if constexpr (sizeof(T) == 4) {
    asm volatile("st.shared::cluster.u32 [%0], %1;\n" ::"r"(a), "r"(bitcast<unsigned>(v)) : "memory");
  } else {
    static_assert(sizeof(T) == 8, "st_cluster: 1, 2, 4 or 8-byte elements");
    asm volatile("st.shared::cluster.u64 [%0], %1;\n" ::"r"(a), "l"(bitcast<unsigned long long>(v)) : "memory");
  }
#else
  *dst = v;
#endif
}

// T.copy_cluster with a remote barrier, bulk form: one thread copies `bytes`
// (a multiple of 16, both addresses 16-byte aligned) of this block's shared memory
// at `src` to block `rank`'s shared memory at `dst`; the copy completes on that
// block's mbarrier at `bar`'s offset, which this call arrives on once (announcing
// the bytes). The issuing block's writes of `src` must be fenced toward the async
// proxy (fence_proxy_async) and ordered before this call (a block barrier).
TL_DEVICE void bulk_copy_cluster(void* dst, const void* src, unsigned bytes, int rank, unsigned long long* bar) {
#ifdef TL_CLUSTER_PTX
  const unsigned rbar = cluster_smem_addr(bar, rank);
  const unsigned rdst = cluster_smem_addr(dst, rank);
  asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;\n" ::"r"(rbar),
               "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(rdst), "r"(smem_addr(src)), "r"(bytes), "r"(rbar) : "memory");
#endif
}

}  // namespace tl
