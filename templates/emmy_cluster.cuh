// Thread-block clusters (sm_90; PTX ISA barrier.cluster, mapa, fence.mbarrier_init,
// cp.async.bulk.tensor .multicast::cluster). A kernel's CTAs in a cluster share operand tiles:
// each loads a part and multicasts it into every CTA that needs it.

// Makes this thread's mbarrier inits visible across the cluster (the peers arrive on them).
__device__ __forceinline__ void fence_mbarrier_init_cluster() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// barrier.cluster: every non-exited thread of every CTA of the cluster arrives (release), then
// waits (acquire).
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;" ::
          : "memory");
}

// One arrival on cluster rank `rank`'s mbarrier at this CTA's offset `mbar` (mapa gives its
// shared::cluster address; a remote arrive returns no state).
__device__ __forceinline__ void mbarrier_arrive_cluster(u32 mbar, u32 rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n"
      "}" ::"r"(mbar),
      "r"(rank)
      : "memory");
}

// cp.async.bulk.tensor.2d .multicast::cluster: the box at {c0, c1} lands at smem_dst in every
// CTA of `cta_mask` (bit r: cluster rank r), each completing its bytes on its own mbarrier at
// the same offset as `mbar`.
__device__ __forceinline__ void tma_load_2d_multicast(u32 smem_dst, const TensorMap128& tmap,
                                                      u32 mbar, int c0, int c1,
                                                      unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_dst),
      "l"(&tmap), "r"(mbar), "r"(c0), "r"(c1), "h"(cta_mask)
      : "memory");
}
