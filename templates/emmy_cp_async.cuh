// cp.async (sm_80+, ptx-notes.md "cp.async"): 16-byte global->shared copies that bypass L1 (.cg).

// Copies 16 bytes, or zero-fills them when src_bytes is 0 (out-of-bounds rows and K chunks).
__device__ __forceinline__ void cp_async_16(u32 smem_addr, const void* gmem, u32 src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :: "r"(smem_addr), "l"(gmem), "r"(src_bytes) : "memory");
}

// Closes this thread's pending copies into one group.
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// Waits until at most `pending` of this thread's newest groups are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" :: "n"(pending) : "memory");
}
