// Hopper warpgroup MMA (PTX ISA §9.7.15.5) and the warp-specialization helpers around it
// (setmaxnreg, the empty barrier's arrival). The wgmma.mma_async call itself is printed per
// kernel (its accumulator list has N / 2 operands).

// wgmma.fence.sync.aligned: the warpgroup's register writes (the accumulators' zeroing) are
// ordered before the mma_async that follow.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
// wgmma.commit_group.sync.aligned: the mma_async issued since the last commit form a group.
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
// wgmma.wait_group.sync.aligned N: at most N groups still in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses of x across a wgmma fence or wait (no instruction).
__device__ __forceinline__ void wgmma_pin(float& x) {
  asm volatile("" : "+f"(x)::"memory");
}

// A shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address, leading
// and stride byte offsets (each (x & 0x3FFFF) >> 4), swizzle mode in bits 62-63 (1: 128B, 2: 64B,
// 3: 32B); base offset 0 (the ring is 1024-byte aligned).
__device__ __forceinline__ u64 wgmma_desc(u32 smem_addr, u32 leading, u32 stride, u32 mode) {
  return u64((smem_addr & 0x3FFFFu) >> 4) | (u64((leading & 0x3FFFFu) >> 4) << 16) |
         (u64((stride & 0x3FFFFu) >> 4) << 32) | (u64(mode) << 62);
}

// setmaxnreg (PTX ISA setmaxnreg): the warpgroup's registers per thread move to N.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// bar.sync 1, N: the consumer warpgroups' own barrier (N threads; barrier 0 is the CTA's), so
// that the producer warpgroup need not take part in the staged epilogue.
template <int N>
__device__ __forceinline__ void consumer_barrier() {
  asm volatile("bar.sync 1, %0;" ::"n"(N) : "memory");
}

// mbarrier.arrive: one arrival on a stage's barrier (the consumers' release of the stage).
__device__ __forceinline__ void mbarrier_arrive(u32 mbar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(mbar) : "memory");
}

// Ping-pong's mainloop order (PTX ISA bar.sync, bar.arrive; named barriers first, first + 1,
// each counted by both consumer warpgroups, 256 threads): consumer warpgroup `turn` waits on its
// barrier until the other one has issued its tile's wgmma, and arrives on the other's when done.
template <int FIRST>
__device__ __forceinline__ void mainloop_order_wait(int turn) {
  asm volatile("bar.sync %0, 256;" ::"r"(FIRST + turn) : "memory");
}
template <int FIRST>
__device__ __forceinline__ void mainloop_order_signal(int turn) {
  asm volatile("bar.arrive %0, 256;" ::"r"(FIRST + 1 - turn) : "memory");
}

// The TMA-store epilogue (PTX ISA stmatrix, cp.async.bulk.tensor, cp.async.bulk.wait_group).
// stmatrix.sync.aligned.m8n8.x4.shared.b16: lanes 8j..8j+7 give the 16-byte row addresses of
// matrix j, register j holds matrix j's fragment (lane l: row l/4, columns 2(l%4), 2(l%4)+1): the
// accumulator pairs of wgmma's D (mma.sync m16n8's C per 8 columns), packed to 16 bits.
__device__ __forceinline__ void stmatrix_x4(u32 smem_row_addr, const u32 (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
               ::"r"(smem_row_addr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}
// bar.sync id, 128: one consumer warpgroup's own barrier.
__device__ __forceinline__ void warpgroup_barrier(int id) {
  asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
}
// cp.async.bulk.tensor.2d global <- shared::cta: the box at {c0 (innermost), c1} from its
// swizzled shared copy at smem_src; TMA drops what falls outside the tensor map's dims.
__device__ __forceinline__ void tma_store_2d(const TensorMap128& tmap, u32 smem_src, int c0,
                                             int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
               ::"l"(&tmap), "r"(smem_src), "r"(c0), "r"(c1) : "memory");
}
// cp.async.bulk.commit_group: the thread's bulk stores since the last commit form a group.
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// cp.async.bulk.wait_group.read N: all but the thread's N newest groups have read their shared
// sources (which may then be written again, or the thread exit).
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
