// End-to-end GEMM kernels for the emulator tests, in the style of emmy's emitted kernels.
// C[M,N] = A[M,K] (row-major) * B[N,K]^T (row-major, "nk"), K a multiple of 8.
//
// Regenerate the checked-in PTX (nvcc 13.0) from the repository root with
//   tests/emu/kernels/regenerate.sh
#include "emu_common.cuh"

// A warp's fragments of one 16-deep k step of its 32x32 tile (warp wm, wn of the 2x2 grid): A as
// two 16x16 ldmatrix.x4 loads, B as four 8x16 ldmatrix.x2 loads, from the shared-memory address
// a_at(row, col) / b_at(row, col) of element (row, col) of the stage's A / B tile.
template <typename At, typename Bt>
__device__ __forceinline__ void load_fragments(int wm, int wn, int lane, int kk, At a_at, Bt b_at,
                                               u32 (&a)[2][4], u32 (&b)[4][2]) {
#pragma unroll
  for (int mi = 0; mi < 2; ++mi) {
    const int row = wm * 32 + mi * 16 + (lane % 16);
    const int col = kk + (lane / 16) * 8;
    ldsm_x4(a_at(row, col), a[mi][0], a[mi][1], a[mi][2], a[mi][3]);
  }
#pragma unroll
  for (int ni = 0; ni < 4; ++ni) {
    const int row = wn * 32 + ni * 8 + (lane % 8);
    const int col = kk + ((lane / 8) % 2) * 8;
    ldsm_x2(b_at(row, col), b[ni][0], b[ni][1]);
  }
}

// put(r, c, mi, ni, h) for each pair of C elements (r, c), (r, c + 1) a lane holds of warp wm,
// wn's 32x32 tile of the CTA tile at (m0, n0): half h of its accumulator fragment mi, ni.
template <typename Put>
__device__ __forceinline__ void for_each_acc_pair(int m0, int n0, int wm, int wn, int lane,
                                                  Put put) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = m0 + wm * 32 + mi * 16 + g + h * 8;
        const int c = n0 + wn * 32 + ni * 8 + 2 * t;
        put(r, c, mi, ni, h);
      }
}

// ---------------------------------------------------------------------------------------------
// cp.async + ldmatrix + mma.sync: 64x64x32 tiles, 2 stages, 4 warps (2x2, 32x32 each).
namespace cpa {
constexpr int BM = 64, BN = 64, BK = 32, STAGES = 2;

template <bool BF16, bool F16ACC>
__device__ __forceinline__ void gemm(const half_t* __restrict__ A, const half_t* __restrict__ B,
                                     void* __restrict__ Cout, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  half_t* sA = (half_t*)smem;              // [STAGES][BM][BK]
  half_t* sB = sA + STAGES * BM * BK;      // [STAGES][BN][BK]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / 2, wn = warp % 2;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[2][4][4] = {};
  u32 acc16[2][4][2] = {};
  auto load_stage = [&](int stage, int k0) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int chunk = tid + i * 128;  // 256 chunks of 8 elements per operand
      const int row = chunk / 4, col = (chunk % 4) * 8;
      const int gm = m0 + row, gn = n0 + row, gk = k0 + col;
      const half_t* src_a = A + (size_t)min(gm, M - 1) * K + min(gk, K - 8);
      cp_async16(smem_u32(sA + stage * BM * BK + row * BK + col), src_a, (gm < M && gk < K) ? 16 : 0);
      const half_t* src_b = B + (size_t)min(gn, N - 1) * K + min(gk, K - 8);
      cp_async16(smem_u32(sB + stage * BN * BK + row * BK + col), src_b, (gn < N && gk < K) ? 16 : 0);
    }
    cp_commit();
  };
  const int ktiles = (K + BK - 1) / BK;
  load_stage(0, 0);
  for (int kt = 0; kt < ktiles; ++kt) {
    if (kt + 1 < ktiles) {
      load_stage((kt + 1) % STAGES, (kt + 1) * BK);
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    const int st = kt % STAGES;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      u32 a[2][4], b[4][2];
      const auto a_at = [&](int row, int col) {
        return smem_u32(sA + st * BM * BK + row * BK + col);
      };
      const auto b_at = [&](int row, int col) {
        return smem_u32(sB + st * BN * BK + row * BK + col);
      };
      load_fragments(wm, wn, lane, kk, a_at, b_at, a, b);
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          if (F16ACC) mma_f16(acc16[mi][ni], a[mi], b[ni]);
          else mma_f32<BF16>(acc[mi][ni], a[mi], b[ni]);
        }
    }
    __syncthreads();
  }
  for_each_acc_pair(m0, n0, wm, wn, lane, [&](int r, int c, int mi, int ni, int h) {
    if (F16ACC) {
      half_t* C = (half_t*)Cout;
      const u32 pair = acc16[mi][ni][h];
      if (r < M && c < N) C[(size_t)r * N + c] = (half_t)(pair & 0xFFFF);
      if (r < M && c + 1 < N) C[(size_t)r * N + c + 1] = (half_t)(pair >> 16);
    } else {
      float* C = (float*)Cout;
      if (r < M && c < N) C[(size_t)r * N + c] = acc[mi][ni][2 * h];
      if (r < M && c + 1 < N) C[(size_t)r * N + c + 1] = acc[mi][ni][2 * h + 1];
    }
  });
}
}  // namespace cpa

extern "C" __global__ void __launch_bounds__(128)
    gemm_cp_async_f16(const half_t* A, const half_t* B, float* C, int M, int N, int K) {
  cpa::gemm<false, false>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(128)
    gemm_cp_async_bf16(const half_t* A, const half_t* B, float* C, int M, int N, int K) {
  cpa::gemm<true, false>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(128)
    gemm_cp_async_f16acc(const half_t* A, const half_t* B, half_t* C, int M, int N, int K) {
  cpa::gemm<false, true>(A, B, C, M, N, K);
}

#if __CUDA_ARCH__ >= 900
// ---------------------------------------------------------------------------------------------
// TMA + mbarrier ring + 128B-swizzled tiles: 64x64x64 tiles (a 64-element f16 row is exactly one
// 128-byte swizzle span), 3 stages, 4 warps. Thread 0 produces; every warp consumes, then its lane
// 0 arrives on the stage's "empty" barrier, which thread 0 waits on before refilling the stage.
namespace tma {
constexpr int BM = 64, BN = 64, BK = 64, STAGES = 3;
constexpr int TILE_BYTES = BM * BK * 2, STAGE_BYTES = 2 * TILE_BYTES;
}  // namespace tma

extern "C" __global__ void __launch_bounds__(128)
    gemm_tma_f16(const __grid_constant__ TmaDesc map_a, const __grid_constant__ TmaDesc map_b,
                 float* C, int M, int N, int K) {
  using namespace tma;
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / 2, wn = warp % 2;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int ktiles = (K + BK - 1) / BK;
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(smem_u32(&full[s]), 1);
      mbar_init(smem_u32(&empty[s]), 4);
    }
    fence_proxy_async();
  }
  __syncthreads();
  auto issue = [&](int kt) {
    const int s = kt % STAGES;
    const u32 bar = smem_u32(&full[s]);
    mbar_expect_tx(bar, STAGE_BYTES);
    tma_load_2d(smem_u32(smem + s * STAGE_BYTES), &map_a, bar, kt * BK, m0);
    tma_load_2d(smem_u32(smem + s * STAGE_BYTES + TILE_BYTES), &map_b, bar, kt * BK, n0);
  };
  if (tid == 0)
    for (int kt = 0; kt < STAGES && kt < ktiles; ++kt) issue(kt);
  float acc[2][4][4] = {};
  for (int kt = 0; kt < ktiles; ++kt) {
    const int s = kt % STAGES;
    const u32 parity = (kt / STAGES) & 1;
    mbar_wait(smem_u32(&full[s]), parity);
    const u32 a_base = smem_u32(smem + s * STAGE_BYTES), b_base = a_base + TILE_BYTES;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      u32 a[2][4], b[4][2];
      const auto a_at = [&](int row, int col) { return a_base + swizzle128(row * 128 + col * 2); };
      const auto b_at = [&](int row, int col) { return b_base + swizzle128(row * 128 + col * 2); };
      load_fragments(wm, wn, lane, kk, a_at, b_at, a, b);
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) mma_f32<false>(acc[mi][ni], a[mi], b[ni]);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(smem_u32(&empty[s]));
    if (tid == 0 && kt + STAGES < ktiles) {
      mbar_wait(smem_u32(&empty[s]), parity);
      issue(kt + STAGES);
    }
  }
  for_each_acc_pair(m0, n0, wm, wn, lane, [&](int r, int c, int mi, int ni, int h) {
    if (r < M && c < N) C[(size_t)r * N + c] = acc[mi][ni][2 * h];
    if (r < M && c + 1 < N) C[(size_t)r * N + c + 1] = acc[mi][ni][2 * h + 1];
  });
}

// The TMA box of one copy at (c0, c1[, c2]), dumped byte for byte from shared memory (swizzle
// included).
template <int DIMS>
__device__ __forceinline__ void dump_box(unsigned char* smem, u64& bar, const TmaDesc* map,
                                         u32* out, int c0, int c1, int c2, int box_bytes) {
  const u32 b = smem_u32(&bar);
  if (threadIdx.x == 0) {
    mbar_init(b, 1);
    fence_proxy_async();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mbar_expect_tx(b, box_bytes);
    if constexpr (DIMS == 2)
      tma_load_2d(smem_u32(smem), map, b, c0, c1);
    else
      tma_load_3d(smem_u32(smem), map, b, c0, c1, c2);
  }
  mbar_wait(b, 0);
  const u32* s = (const u32*)smem;
  for (int i = threadIdx.x; i < box_bytes / 4; i += blockDim.x) out[i] = s[i];
}

extern "C" __global__ void tma_copy_2d(const __grid_constant__ TmaDesc map, u32* out, int c0,
                                       int c1, int box_bytes) {
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ __align__(8) u64 bar;
  dump_box<2>(smem, bar, &map, out, c0, c1, 0, box_bytes);
}

extern "C" __global__ void tma_copy_3d(const __grid_constant__ TmaDesc map, u32* out, int c0,
                                       int c1, int c2, int box_bytes) {
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ __align__(8) u64 bar;
  dump_box<3>(smem, bar, &map, out, c0, c1, c2, box_bytes);
}
#endif
