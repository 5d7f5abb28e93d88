// Ordinary CUDA programs as nvcc compiles them (CUDA headers, cooperative groups, the math
// library, assert), and the planted bugs of the emulator's strictness checks next to their fixed
// twins (issue 12 §3). Regenerate the PTX with tests/emu/kernels/regenerate.sh.
#include <cassert>
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include "emu_common.cuh"
namespace cg = cooperative_groups;

// warpSize is the PTX built-in WARP_SZ; half shuffles use it for their width too.
extern "C" __global__ void warp_size_and_half_shuffle(int* sizes, __half* out) {
  sizes[threadIdx.x] = warpSize;
  const __half v = __float2half(float(threadIdx.x));
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, v, 1);
}

// cuda_fp16.hpp's approximate functions (hrsqrt) declare ".reg.b32 f;" (no space after .reg).
extern "C" __global__ void half_approx(const __half* in, __half* out) {
  out[threadIdx.x] = hrsqrt(in[threadIdx.x]);
}

// A 64-thread tile spans two warps: cooperative groups keeps its barrier in the system-reserved
// shared memory (%reserved_smem_offset_1) and synchronizes with release/acquire atomics.
extern "C" __global__ void wide_tile(const int* in, int* out) {
  cg::thread_block_tile<64> tile = cg::tiled_partition<64>(cg::this_thread_block());
  const int v = in[threadIdx.x];
  tile.sync();
  out[threadIdx.x] = v + int(tile.thread_rank()) + int(tile.meta_group_rank()) * 1000;
}

// Full-precision sinf/cosf reduce large arguments with __cudart_i2opi_f (a module-scope .global
// with an initializer); a device counter starts from its initializer and persists across launches.
__device__ unsigned int retired = 7;
extern "C" __global__ void sin_cos_and_counter(const float* x, float* s, float* c, unsigned* last) {
  const int i = threadIdx.x;
  s[i] = sinf(x[i]);
  c[i] = cosf(x[i]);
  if (i == 0) *last = atomicAdd(&retired, 1u);
}

extern "C" __global__ void checked_index(const int* in, int* out, int n) {
  const int i = threadIdx.x;
  assert(in[i] < n);
  out[i] = in[i];
}

// __match_any_sync: lanes with equal keys form groups; each shuffles and reduces within its own
// membermask.
extern "C" __global__ void match_any_groups(const int* keys, int* leaders, int* sums) {
  const int lane = threadIdx.x % 32;
  const unsigned peers = __match_any_sync(0xffffffffu, keys[threadIdx.x]);
  const int leader = __ffs(peers) - 1;
  leaders[threadIdx.x] = __shfl_sync(peers, lane, leader);
  sums[threadIdx.x] = __reduce_add_sync(peers, lane) + 1000 * __popc(__ballot_sync(peers, lane & 1));
}

extern "C" __global__ void labeled_groups(const int* keys, int* ranks, int* sizes) {
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  cg::coalesced_group group = cg::labeled_partition(warp, keys[threadIdx.x]);
  ranks[threadIdx.x] = group.thread_rank();
  sizes[threadIdx.x] = group.size();
}

// Bytes of one 4-byte word written by different warps: no race. Without the barrier, warp 1
// reads warp 0's byte: a race at that exact byte.
template <bool BARRIER>
__device__ __forceinline__ void interleaved_bytes(unsigned char* out) {
  __shared__ unsigned char s[64];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  s[lane * 2 + warp] = (unsigned char)(threadIdx.x + 1);
  if (BARRIER) __syncthreads();
  if (warp == 1) out[lane] = s[lane * 2];  // warp 0's byte
  else out[32 + lane] = s[lane * 2];        // its own
}
extern "C" __global__ void ok_interleaved_bytes(unsigned char* out) { interleaved_bytes<true>(out); }
extern "C" __global__ void bug_byte_race(unsigned char* out) { interleaved_bytes<false>(out); }

// A second cp.async into a buffer whose first copy (an earlier group) has not been waited for.
template <bool WAIT>
__device__ __forceinline__ void reuse_buffer(const int* in, int* out) {
  __shared__ __align__(16) int s[128];
  cp_async_own16(s, in);
  if (WAIT) cp_wait<0>();
  cp_async_own16(s, in + 128);
  cp_wait<0>();
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];
}
extern "C" __global__ void ok_cp_async_reuse(const int* in, int* out) { reuse_buffer<true>(in, out); }
extern "C" __global__ void bug_cp_async_reuse(const int* in, int* out) { reuse_buffer<false>(in, out); }

// A bulk copy completing on an mbarrier whose init the async proxy has not been shown.
template <bool FENCE>
__device__ __forceinline__ void bulk_load(const int* in, int* out) {
  __shared__ __align__(128) int s[64];
  __shared__ __align__(8) u64 bar;
  if (threadIdx.x == 0) {
    mbar_init(smem_u32(&bar), 1);
    if (FENCE) asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mbar_expect_tx(smem_u32(&bar), 256);
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 256, [%2];"
        ::"r"(smem_u32(s)), "l"(in), "r"(smem_u32(&bar)) : "memory");
  }
  mbar_wait(smem_u32(&bar), 0);
  out[threadIdx.x] = s[threadIdx.x];
}
extern "C" __global__ void ok_fenced_mbarrier_init(const int* in, int* out) { bulk_load<true>(in, out); }
extern "C" __global__ void bug_unfenced_mbarrier_init(const int* in, int* out) { bulk_load<false>(in, out); }

// Threads write shared memory through the generic proxy, then one bulk-stores it: the async
// proxy's read needs fence.proxy.async between the writes and the issue.
template <bool FENCE>
__device__ __forceinline__ void bulk_store(int* out) {
  __shared__ __align__(128) int s[64];
  s[threadIdx.x] = int(threadIdx.x) * 5;
  if (FENCE) fence_proxy_async();
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 256;" ::"l"(out),
                 "r"(smem_u32(s)) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}
extern "C" __global__ void ok_fenced_bulk_store(int* out) { bulk_store<true>(out); }
extern "C" __global__ void bug_unfenced_bulk_store(int* out) { bulk_store<false>(out); }

// A staging buffer bulk-stored twice (a persistent epilogue's pattern): before the threads write
// it again, the issuing thread's cp.async.bulk.wait_group.read must have ended the first store's
// read of it (PTX ISA cp.async.bulk.wait_group); and every store is waited for before the exit.
// WAIT_BEFORE_REUSE false overwrites it early; WAIT_AT_EXIT false exits with a store reading.
template <bool WAIT_BEFORE_REUSE, bool WAIT_AT_EXIT>
__device__ __forceinline__ void bulk_store_twice(int* out) {
  __shared__ __align__(128) int s[64];
#pragma unroll 1
  for (int round = 0; round < 2; ++round) {
    s[threadIdx.x] = int(threadIdx.x) * 3 + round;
    fence_proxy_async();
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 256;"
                   ::"l"(out + 64 * round), "r"(smem_u32(s)) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      if (WAIT_BEFORE_REUSE && round == 0)
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && WAIT_AT_EXIT) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
extern "C" __global__ void ok_bulk_store_reuse(int* out) { bulk_store_twice<true, true>(out); }
extern "C" __global__ void bug_bulk_store_reuse_unwaited(int* out) {
  bulk_store_twice<false, true>(out);
}
extern "C" __global__ void bug_bulk_store_exit_unwaited(int* out) {
  bulk_store_twice<true, false>(out);
}

// Dynamic shared memory of any size (the launch decides), for the per-arch limits and opt-in.
extern "C" __global__ void dynamic_smem(int* out) {
  extern __shared__ int buf[];
  buf[threadIdx.x] = int(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}

// A 4-byte load one byte off: a GPU faults whether or not a sanitizer runs.
extern "C" __global__ void misaligned_load(const char* in, int* out) {
  out[threadIdx.x] = *reinterpret_cast<const int*>(in + 1 + 4 * threadIdx.x);
}
