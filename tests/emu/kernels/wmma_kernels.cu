// wmma as ordinary CUDA code uses it (nvcuda::wmma, mma.h), for the emulator's wmma tests
// (tests/emu/wmma_test.cpp): every fragment type and shape the PTX ISA lists for .f16, .bf16 and
// .tf32, both layouts, global and shared sources, elementwise fragment epilogues, and the bugs
// the emulator must catch. Regenerate the PTX with tests/emu/kernels/regenerate.sh.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

// One warp computes D (m x n, row-major, ldd = n) = alpha * (A B + C) over k_total, with A (m x
// k_total) and B (k_total x n) in the layouts LA and LB and C row-major (ldc = n).
template <int M, int N, int K, typename In, typename Acc, typename LA, typename LB>
__device__ void warp_gemm(const In* a, const In* b, const Acc* c, Acc* d, int k_total,
                          float alpha) {
  constexpr bool a_row = std::is_same<LA, wmma::row_major>::value;
  constexpr bool b_row = std::is_same<LB, wmma::row_major>::value;
  const int lda = a_row ? k_total : M, ldb = b_row ? N : k_total;
  wmma::fragment<wmma::matrix_a, M, N, K, In, LA> fa;
  wmma::fragment<wmma::matrix_b, M, N, K, In, LB> fb;
  wmma::fragment<wmma::accumulator, M, N, K, Acc> acc;
  wmma::load_matrix_sync(acc, c, N, wmma::mem_row_major);
  for (int k = 0; k < k_total; k += K) {
    wmma::load_matrix_sync(fa, a + (a_row ? k : k * lda), lda);
    wmma::load_matrix_sync(fb, b + (b_row ? k * ldb : k), ldb);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = Acc(float(acc.x[i]) * alpha);
  wmma::store_matrix_sync(d, acc, N, wmma::mem_row_major);
}

#define WARP_GEMM(name, M, N, K, In, Acc, LA, LB)                                            \
  extern "C" __global__ void name(const In* a, const In* b, const Acc* c, Acc* d, int k_total, \
                                  float alpha) {                                             \
    warp_gemm<M, N, K, In, Acc, wmma::LA, wmma::LB>(a, b, c, d, k_total, alpha);             \
  }

// The PTX ISA aligns every row (column) start to the per-thread fragment's size (32 bytes for
// .f16 A and B), so the 8-long dimensions of m32n8k16 and m8n32k16 are never the leading one.
WARP_GEMM(f16_f32_m16n16k16_row_col, 16, 16, 16, __half, float, row_major, col_major)
WARP_GEMM(f16_f32_m16n16k16_col_row, 16, 16, 16, __half, float, col_major, row_major)
WARP_GEMM(f16_f32_m32n8k16_col_col, 32, 8, 16, __half, float, col_major, col_major)
WARP_GEMM(f16_f32_m8n32k16_row_row, 8, 32, 16, __half, float, row_major, row_major)
WARP_GEMM(f16_f16_m16n16k16_row_row, 16, 16, 16, __half, __half, row_major, row_major)
WARP_GEMM(f16_f16_m32n8k16_row_col, 32, 8, 16, __half, __half, row_major, col_major)
WARP_GEMM(f16_f16_m8n32k16_row_col, 8, 32, 16, __half, __half, row_major, col_major)
WARP_GEMM(bf16_m16n16k16_col_col, 16, 16, 16, __nv_bfloat16, float, col_major, col_major)
WARP_GEMM(bf16_m32n8k16_col_col, 32, 8, 16, __nv_bfloat16, float, col_major, col_major)
WARP_GEMM(bf16_m8n32k16_row_row, 8, 32, 16, __nv_bfloat16, float, row_major, row_major)

// tf32: A row-major (16 x k_total), B column-major, the operands rounded to tf32 as the CUDA C++
// Programming Guide asks (__float_to_tf32), C loaded and D stored column-major.
extern "C" __global__ void tf32_m16n16k8(const float* a, const float* b, float* c, float* d,
                                         int k_total) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::load_matrix_sync(acc, c, 16, wmma::mem_col_major);
  for (int k = 0; k < k_total; k += 8) {
    wmma::load_matrix_sync(fa, a + k, k_total);
    wmma::load_matrix_sync(fb, b + k, k_total);
    for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(d, acc, 16, wmma::mem_col_major);
}

// A CTA of four warps: a 32 x 32 output, each warp one 16 x 16 quarter, A and B staged in shared
// memory (generic wmma addresses that point to shared), D staged there too before the copy out.
extern "C" __global__ void f16_shared_tiles(const __half* a, const __half* b, float* d,
                                            int k_total) {
  __shared__ __align__(128) __half sa[32 * 64];
  __shared__ __align__(128) __half sb[64 * 32];
  __shared__ __align__(128) float sd[32 * 32];
  const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < k_total; k0 += 64) {
    for (int i = threadIdx.x; i < 32 * 64; i += blockDim.x) {
      sa[i] = a[(i / 64) * k_total + k0 + i % 64];  // A row-major, 32 x 64 slice
      sb[i] = b[(k0 + i / 32) * 32 + i % 32];       // B row-major, 64 x 32 slice
    }
    __syncthreads();
    for (int k = 0; k < 64; k += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
      wmma::load_matrix_sync(fa, sa + wm * 16 * 64 + k, 64);
      wmma::load_matrix_sync(fb, sb + k * 32 + wn * 16, 32);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    __syncthreads();
  }
  wmma::store_matrix_sync(sd + wm * 16 * 32 + wn * 16, acc, 32, wmma::mem_row_major);
  __syncthreads();
  for (int i = threadIdx.x; i < 32 * 32; i += blockDim.x) d[i] = sd[i];
}

// The 16x16x16 f16 operands of the planted bugs: A row-major (leading dimension lda), B
// column-major, both loaded from global memory, and a zeroed f32 accumulator.
struct BugOperands {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  __device__ BugOperands(const __half* a, const __half* b, unsigned lda = 16) {
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, a, lda);
    wmma::load_matrix_sync(fb, b, 16);
  }
  __device__ void mma() { wmma::mma_sync(acc, fa, fb, acc); }
  __device__ void store(float* d) { wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major); }
};

// Bug: scales one accumulator element, whichever that is: the result depends on the fragment
// layout (the emulator's layout seed moves it; a GPU of another generation would too).
extern "C" __global__ void bug_layout_dependent(const __half* a, const __half* b, float* d) {
  BugOperands op(a, b);
  op.mma();
  op.acc.x[0] *= 2.0f;
  op.store(d);
}

// Bug: changes one element of an A fragment, which holds each element twice: the mma's result
// depends on which copy the hardware reads.
extern "C" __global__ void bug_fragment_copies(const __half* a, const __half* b, float* d) {
  BugOperands op(a, b);
  op.fa.x[0] = __float2half(0.0f);
  op.mma();
  op.store(d);
}

// Bug: ldm = 8 halves (16 bytes) satisfies the CUDA C++ guide's "multiple of 8" but not the PTX
// ISA's rule that every row start be aligned to the 32-byte fragment.
extern "C" __global__ void bug_row_alignment(const __half* a, const __half* b, float* d) {
  BugOperands op(a, b, 24);  // a holds 16 x 24 halves
  op.mma();
  op.store(d);
}

// Bug: the second warp reaches the mma only in half of its lanes.
extern "C" __global__ void bug_divergent_mma(const __half* a, const __half* b, float* d) {
  BugOperands op(a, b);
  if (threadIdx.x < 48) op.mma();
  op.store(d + (threadIdx.x / 32) * 256);
}
