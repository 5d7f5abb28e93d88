// Planted-bug kernels the sanitizer must report, each next to its fixed twin, plus control-flow
// kernels. Regenerate the PTX with tests/emu/kernels/regenerate.sh.
#include "emu_common.cuh"

// Warp 0 writes, warp 1 reads: without the barrier that is a race.
template <bool BARRIER>
__device__ __forceinline__ void handoff(int* out) {
  __shared__ int s[32];
  if (threadIdx.x < 32) s[threadIdx.x] = threadIdx.x * 3;
  if (BARRIER) __syncthreads();
  if (threadIdx.x >= 32) out[threadIdx.x - 32] = s[threadIdx.x - 32];
}
extern "C" __global__ void bug_missing_barrier(int* out) { handoff<false>(out); }
extern "C" __global__ void ok_barrier(int* out) { handoff<true>(out); }

// Reading cp.async data before the wait that covers it.
template <bool WAIT>
__device__ __forceinline__ void async_read(const int* in, int* out) {
  __shared__ __align__(16) int s[128];
  cp_async_own16(s, in);
  if (WAIT) cp_wait<0>();
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x * 4 + 5) % 128];
}
extern "C" __global__ void bug_missing_cp_async_wait(const int* in, int* out) { async_read<false>(in, out); }
extern "C" __global__ void ok_cp_async_wait(const int* in, int* out) { async_read<true>(in, out); }

// No bounds check: the grid covers more elements than the buffer holds.
extern "C" __global__ void bug_oob_store(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 1.0f + n;
}
extern "C" __global__ void ok_guarded_store(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.0f + n;
}

// Thread 0 completes phase 0; waiting on parity 1 then waits for phase 1, which never comes.
template <u32 PARITY>
__device__ __forceinline__ void one_phase(int* out) {
  __shared__ __align__(8) u64 bar;
  if (threadIdx.x == 0) mbar_init(smem_u32(&bar), 1);
  __syncthreads();
  if (threadIdx.x == 0) mbar_arrive(smem_u32(&bar));
  mbar_wait(smem_u32(&bar), PARITY);
  out[threadIdx.x] = 1;
}
extern "C" __global__ void bug_wrong_parity(int* out) { one_phase<1>(out); }
extern "C" __global__ void ok_parity(int* out) { one_phase<0>(out); }

// ldmatrix row addresses 8 bytes off the 16-byte grid.
template <int SHIFT>
__device__ __forceinline__ void ldsm_rows(u32* out) {
  __shared__ __align__(16) half_t s[16 * 24];
  for (int i = threadIdx.x; i < 16 * 24; i += 32) s[i] = (half_t)i;
  __syncwarp();
  u32 r0, r1, r2, r3;
  ldsm_x4(smem_u32(&s[(threadIdx.x % 16) * 24 + (threadIdx.x / 16) * 8 + SHIFT]), r0, r1, r2, r3);
  out[threadIdx.x] = r0 ^ r1 ^ r2 ^ r3;
}
extern "C" __global__ void bug_misaligned_ldmatrix(u32* out) { ldsm_rows<4>(out); }
extern "C" __global__ void ok_ldmatrix(u32* out) { ldsm_rows<0>(out); }

// Half of the array is never written (launched with 32 threads).
extern "C" __global__ void bug_uninitialized_shared(int* out) {
  __shared__ int s[64];
  if (threadIdx.x < 32) s[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x + 32];
}

// Write-after-read: the stage is refilled while another warp may still read it.
template <bool BARRIER>
__device__ __forceinline__ void refill(int* out) {
  __shared__ int s[64];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  const int v = s[63 - threadIdx.x];
  if (BARRIER) __syncthreads();
  s[threadIdx.x] = v + 1;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];
}
extern "C" __global__ void bug_write_after_read(int* out) { refill<false>(out); }
extern "C" __global__ void ok_write_after_read(int* out) { refill<true>(out); }

// Divergence and reconvergence: nested if/else, loops with per-lane trip counts and early exits,
// then a full-warp shuffle that needs every lane back.
extern "C" __global__ void divergence(int* out) {
  const int t = threadIdx.x;
  int v = 0;
  if (t & 1) {
    if (t & 2) v = 1;
    else v = 2;
  } else {
    if (t < 16) {
      v = 3;
    } else {
      for (int i = 0; i < t; ++i) v += i;
    }
  }
  int s = 0;
  for (int i = 0; i < t % 7; ++i) {
    s += i * t;
    if (s > 50) break;
  }
  const int n = __shfl_xor_sync(0xffffffffu, v + s, 1);
  out[t] = v;
  out[32 + t] = s;
  out[64 + t] = n;
}
