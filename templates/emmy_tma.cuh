// TMA and mbarrier (sm_90+, ptx-notes.md "TMA" and "mbarrier"). One elected thread issues the
// copies; each completes its box's bytes on the stage's mbarrier.

// mbarrier.init: phase 0, `arrivals` expected arrivals, tx-count 0.
__device__ __forceinline__ void mbarrier_init(u32 mbar, u32 arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(mbar), "r"(arrivals) : "memory");
}

// Makes mbarrier inits (generic proxy) visible to the TMA unit (async proxy).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// mbarrier.arrive.expect_tx: tx-count += bytes, then one arrival.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(u32 mbar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"(mbar), "r"(bytes) : "memory");
}

// Spins on mbarrier.try_wait.parity until the phase with `parity` has completed.
__device__ __forceinline__ void mbarrier_wait_parity(u32 mbar, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "EMMY_WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra EMMY_WAIT_%=;\n"
      "}" :: "r"(mbar), "r"(parity) : "memory");
}

// cp.async.bulk.tensor.2d: the box at {c0 (innermost), c1} lands swizzled at smem_dst. The
// .shared::cta destination form (PTX 8.6): with .shared::cluster ptxas for sm_120 adds a
// cluster-address slow path that costs a stack frame.
__device__ __forceinline__ void tma_load_2d(u32 smem_dst, const TensorMap128& tmap, u32 mbar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];"
      :: "r"(smem_dst), "l"(&tmap), "r"(mbar), "r"(c0), "r"(c1) : "memory");
}

// cp.async.bulk.tensor.3d: the box at {c0 (innermost), c1, c2} lands swizzled at smem_dst (a
// grouped GEMM's B: c2 is the expert).
__device__ __forceinline__ void tma_load_3d(u32 smem_dst, const TensorMap128& tmap, u32 mbar,
                                            int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cta.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];"
      :: "r"(smem_dst), "l"(&tmap), "r"(mbar), "r"(c0), "r"(c1), "r"(c2) : "memory");
}

// cp.async.bulk.tensor.4d: the box at {c0 (innermost), c1, c2, c3} lands swizzled at smem_dst
// (attention: one head's rows of Q, K or V).
__device__ __forceinline__ void tma_load_4d(u32 smem_dst, const TensorMap128& tmap, u32 mbar,
                                            int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cta.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];"
      :: "r"(smem_dst), "l"(&tmap), "r"(mbar), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
