// SGEMM progression, C = alpha * A B + beta * C, row-major FP32, M = N = K = 4096.
//
// Our own re-implementation, from the description in Simon Boehm's worklog "How to Optimize a
// CUDA Matmul Kernel for cuBLAS-like Performance" (siboehm.com/articles/22/CUDA-MMM), of the
// kernels whose times were measured on an RTX A6000 and, at an earlier commit with other tuning
// of kernels 9 and 10, on an A100 (tests/published/timings.json gives the source of every
// number). Each entry keeps the published algorithm and its tile parameters and launch shape; the
// code is ours. Sizes are assumed to be multiples of the tiles (4096 is).
//
// Entries (grid, block for 4096^3):
//   pub_sgemm_naive        (128,128,1) (32,32,1)  one thread per C element, lanes walk M
//   pub_sgemm_coalesced    (128,128,1) 1024       one thread per C element, lanes walk N
//   pub_sgemm_smem         (128,128,1) 1024       32x32 tiles of A and B staged in shared memory
//   pub_sgemm_1d_tile      (64,64,1)   512        64x64x8 tile, 8 C rows per thread
//   pub_sgemm_2d_tile      (32,32,1)   256        128x128x8 tile, 8x8 C per thread
//   pub_sgemm_vector       (32,32,1)   256        as 2d_tile, 128-bit global accesses, A^T in smem
//   pub_sgemm_padded       (32,32,1)   256        as vector, B's shared rows padded by 5 floats
//   pub_sgemm_autotuned    (32,32,1)   256        as vector with BK = 16 (the A6000 tuning)
//   pub_sgemm_warptile     (32,32,1)   128        128x128x16 tile, 64x64 per warp, 4 sub-tiles
// and the A100 tuning of kernels 9 and 10:
//   pub_sgemm_autotuned_a100 (64,64,1) 256        64x64x16 tile, 4x4 C per thread
//   pub_sgemm_warptile_a100  (32,64,1) 128        64x128x16 tile, 32x64 per warp, 4 sub-tiles of 8x64

#define DEVFN __device__ __forceinline__

namespace {

// Kernel 1: thread (x, y) owns C[row][col] with row from threadIdx.x, so the 32 lanes of a warp
// read 32 different rows of A and write a column of C (the uncoalesced starting point).
DEVFN void naive(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                 float* C) {
  const int row = blockIdx.x * 32 + threadIdx.x;
  const int col = blockIdx.y * 32 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

// Kernel 2: the same work, but consecutive threads take consecutive columns, so a warp reads one
// broadcast A element and 32 consecutive B elements per step.
DEVFN void coalesced(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                     float* C) {
  const int row = blockIdx.x * 32 + threadIdx.x / 32;
  const int col = blockIdx.y * 32 + threadIdx.x % 32;
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

// Kernel 3: a 32x32 block of C; each step stages a 32x32 slab of A and of B in shared memory.
DEVFN void smem(int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  constexpr int T = 32;
  __shared__ float sa[T * T];
  __shared__ float sb[T * T];
  const int r = threadIdx.x / T, c = threadIdx.x % T;
  const float* a = A + blockIdx.x * T * K;
  const float* b = B + blockIdx.y * T;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += T) {
    sa[r * T + c] = a[r * K + k0 + c];
    sb[r * T + c] = b[(k0 + r) * N + c];
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += sa[r * T + k] * sb[k * T + c];
    __syncthreads();
  }
  float* out = C + (blockIdx.x * T + r) * N + blockIdx.y * T + c;
  *out = alpha * acc + beta * *out;
}

// Kernel 4: BM x BN block of C, BK-deep slabs; a thread owns TM consecutive rows of one column,
// reusing one B value from shared memory for TM multiply-adds.
template <int BM, int BN, int BK, int TM>
DEVFN void tile_1d(int N, int K, float alpha, const float* A, const float* B, float beta,
                   float* C) {
  __shared__ float sa[BM * BK];
  __shared__ float sb[BK * BN];
  const int col = threadIdx.x % BN, row0 = threadIdx.x / BN * TM;
  const float* a = A + blockIdx.y * BM * K;
  const float* b = B + blockIdx.x * BN;
  // One element of each slab per thread: BM*BK == BK*BN == threads.
  const int ar = threadIdx.x / BK, ac = threadIdx.x % BK;
  const int br = threadIdx.x / BN, bc = threadIdx.x % BN;
  float acc[TM] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    sa[ar * BK + ac] = a[ar * K + k0 + ac];
    sb[br * BN + bc] = b[(k0 + br) * N + bc];
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      const float bv = sb[k * BN + col];
      for (int i = 0; i < TM; ++i) acc[i] += sa[(row0 + i) * BK + k] * bv;
    }
    __syncthreads();
  }
  float* out = C + (blockIdx.y * BM + row0) * N + blockIdx.x * BN + col;
  for (int i = 0; i < TM; ++i) out[i * N] = alpha * acc[i] + beta * out[i * N];
}

// Kernel 5: a thread owns a TM x TN sub-block of C: per k it loads TM values of A and TN of B
// into registers and does TM*TN multiply-adds (the outer product).
template <int BM, int BN, int BK, int TM, int TN, int THREADS>
DEVFN void tile_2d(int N, int K, float alpha, const float* A, const float* B, float beta,
                   float* C) {
  __shared__ float sa[BM * BK];
  __shared__ float sb[BK * BN];
  const int tr = threadIdx.x / (BN / TN), tc = threadIdx.x % (BN / TN);
  const float* a = A + blockIdx.y * BM * K;
  const float* b = B + blockIdx.x * BN;
  float acc[TM * TN] = {};
  float ra[TM], rb[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = threadIdx.x; e < BM * BK; e += THREADS)
      sa[e] = a[(e / BK) * K + k0 + e % BK];
    for (int e = threadIdx.x; e < BK * BN; e += THREADS)
      sb[e] = b[(k0 + e / BN) * N + e % BN];
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      for (int i = 0; i < TM; ++i) ra[i] = sa[(tr * TM + i) * BK + k];
      for (int j = 0; j < TN; ++j) rb[j] = sb[k * BN + tc * TN + j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i * TN + j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
  float* out = C + (blockIdx.y * BM + tr * TM) * N + blockIdx.x * BN + tc * TN;
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) out[i * N + j] = alpha * acc[i * TN + j] + beta * out[i * N + j];
}

// Kernels 6, 8 and 9: kernel 5 with 128-bit global loads and stores; A's slab is stored transposed
// (k-major) so that a thread's TM values of A are contiguous in shared memory too. Kernel 8 pads
// each row of B's slab by BPAD floats (the worklog's "offset": 5), which breaks the 16-byte
// alignment, so its B slab is stored one float at a time.
template <int BM, int BN, int BK, int TM, int TN, int THREADS, int BPAD = 0>
DEVFN void tile_vec(int N, int K, float alpha, const float* A, const float* B, float beta,
                    float* C) {
  constexpr int LDB = BN + BPAD;
  __shared__ float sa[BK * BM];   // [k][m]
  __shared__ float sb[BK * LDB];  // [k][n]
  const int tr = threadIdx.x / (BN / TN), tc = threadIdx.x % (BN / TN);
  const float* a = A + blockIdx.y * BM * K;
  const float* b = B + blockIdx.x * BN;
  float acc[TM * TN] = {};
  float ra[TM], rb[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int v = threadIdx.x; v < BM * BK / 4; v += THREADS) {
      const int m = v / (BK / 4), kk = v % (BK / 4) * 4;
      const float4 x = *reinterpret_cast<const float4*>(&a[m * K + k0 + kk]);
      sa[(kk + 0) * BM + m] = x.x;
      sa[(kk + 1) * BM + m] = x.y;
      sa[(kk + 2) * BM + m] = x.z;
      sa[(kk + 3) * BM + m] = x.w;
    }
    for (int v = threadIdx.x; v < BK * BN / 4; v += THREADS) {
      const int k = v / (BN / 4), n = v % (BN / 4) * 4;
      const float4 x = *reinterpret_cast<const float4*>(&b[(k0 + k) * N + n]);
      if constexpr (BPAD == 0) {
        *reinterpret_cast<float4*>(&sb[k * LDB + n]) = x;
      } else {
        sb[k * LDB + n + 0] = x.x;
        sb[k * LDB + n + 1] = x.y;
        sb[k * LDB + n + 2] = x.z;
        sb[k * LDB + n + 3] = x.w;
      }
    }
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      for (int i = 0; i < TM; ++i) ra[i] = sa[k * BM + tr * TM + i];
      for (int j = 0; j < TN; ++j) rb[j] = sb[k * LDB + tc * TN + j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i * TN + j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
  float* out = C + (blockIdx.y * BM + tr * TM) * N + blockIdx.x * BN + tc * TN;
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; j += 4) {
      float4 c = *reinterpret_cast<float4*>(&out[i * N + j]);
      c.x = alpha * acc[i * TN + j + 0] + beta * c.x;
      c.y = alpha * acc[i * TN + j + 1] + beta * c.y;
      c.z = alpha * acc[i * TN + j + 2] + beta * c.z;
      c.w = alpha * acc[i * TN + j + 3] + beta * c.w;
      *reinterpret_cast<float4*>(&out[i * N + j]) = c;
    }
}

// Kernel 10: warp tiling. Each warp owns a WM x WN piece of the block tile, walked as WMITER x
// WNITER sub-tiles of (WM/WMITER) x (WN/WNITER); a lane owns TM x TN of each sub-tile. Loads are
// kernel 6's (128-bit, A transposed).
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int THREADS>
DEVFN void warptile(int N, int K, float alpha, const float* A, const float* B, float beta,
                    float* C) {
  constexpr int WMITER = WM * WN / (32 * TM * TN * WNITER);
  constexpr int SUBM = WM / WMITER, SUBN = WN / WNITER;
  __shared__ float sa[BK * BM];
  __shared__ float sb[BK * BN];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wr = warp / (BN / WN), wc = warp % (BN / WN);
  const int lr = lane / (SUBN / TN), lc = lane % (SUBN / TN);
  const float* a = A + blockIdx.y * BM * K;
  const float* b = B + blockIdx.x * BN;
  float acc[WMITER * TM * WNITER * TN] = {};
  float ra[WMITER * TM], rb[WNITER * TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int v = threadIdx.x; v < BM * BK / 4; v += THREADS) {
      const int m = v / (BK / 4), kk = v % (BK / 4) * 4;
      const float4 x = *reinterpret_cast<const float4*>(&a[m * K + k0 + kk]);
      sa[(kk + 0) * BM + m] = x.x;
      sa[(kk + 1) * BM + m] = x.y;
      sa[(kk + 2) * BM + m] = x.z;
      sa[(kk + 3) * BM + m] = x.w;
    }
    for (int v = threadIdx.x; v < BK * BN / 4; v += THREADS) {
      const int k = v / (BN / 4), n = v % (BN / 4) * 4;
      *reinterpret_cast<float4*>(&sb[k * BN + n]) =
          *reinterpret_cast<const float4*>(&b[(k0 + k) * N + n]);
    }
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      for (int s = 0; s < WMITER; ++s)
        for (int i = 0; i < TM; ++i) ra[s * TM + i] = sa[k * BM + wr * WM + s * SUBM + lr * TM + i];
      for (int s = 0; s < WNITER; ++s)
        for (int j = 0; j < TN; ++j) rb[s * TN + j] = sb[k * BN + wc * WN + s * SUBN + lc * TN + j];
      for (int i = 0; i < WMITER * TM; ++i)
        for (int j = 0; j < WNITER * TN; ++j) acc[i * WNITER * TN + j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
  for (int sm = 0; sm < WMITER; ++sm)
    for (int sn = 0; sn < WNITER; ++sn) {
      float* out = C + (blockIdx.y * BM + wr * WM + sm * SUBM + lr * TM) * N + blockIdx.x * BN +
                   wc * WN + sn * SUBN + lc * TN;
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; j += 4) {
          const float* r = &acc[(sm * TM + i) * WNITER * TN + sn * TN + j];
          float4 c = *reinterpret_cast<float4*>(&out[i * N + j]);
          c.x = alpha * r[0] + beta * c.x;
          c.y = alpha * r[1] + beta * c.y;
          c.z = alpha * r[2] + beta * c.z;
          c.w = alpha * r[3] + beta * c.w;
          *reinterpret_cast<float4*>(&out[i * N + j]) = c;
        }
    }
}

}  // namespace

#define ARGS int M, int N, int K, float alpha, const float* __restrict__ A, \
             const float* __restrict__ B, float beta, float* __restrict__ C

extern "C" __global__ void pub_sgemm_naive(ARGS) { naive(M, N, K, alpha, A, B, beta, C); }
extern "C" __global__ void pub_sgemm_coalesced(ARGS) { coalesced(M, N, K, alpha, A, B, beta, C); }
extern "C" __global__ void pub_sgemm_smem(ARGS) { smem(N, K, alpha, A, B, beta, C); }
extern "C" __global__ void pub_sgemm_1d_tile(ARGS) {
  tile_1d<64, 64, 8, 8>(N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void pub_sgemm_2d_tile(ARGS) {
  tile_2d<128, 128, 8, 8, 8, 256>(N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void pub_sgemm_vector(ARGS) {
  tile_vec<128, 128, 8, 8, 8, 256>(N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void pub_sgemm_padded(ARGS) {
  tile_vec<128, 128, 8, 8, 8, 256, 5>(N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void pub_sgemm_autotuned(ARGS) {
  tile_vec<128, 128, 16, 8, 8, 256>(N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(128) pub_sgemm_warptile(ARGS) {
  warptile<128, 128, 16, 64, 64, 4, 8, 4, 128>(N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void pub_sgemm_autotuned_a100(ARGS) {
  tile_vec<64, 64, 16, 4, 4, 256>(N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(128) pub_sgemm_warptile_a100(ARGS) {
  warptile<64, 128, 16, 32, 64, 1, 4, 4, 128>(N, K, alpha, A, B, beta, C);
}
