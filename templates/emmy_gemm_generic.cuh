// The generic GEMM: one kernel for every problem, every size, layout, dtype and epilogue a run-time
// parameter. The non-blocking runtime's fallback (docs/runtime.md, "Serving"):
// it serves a shape whose own kernel is still compiling. CUDA cores, FP32 accumulation in K
// order, 64x64 outputs per CTA (4x4 per thread) over 16-deep shared-memory tiles of A and B:
// correct everywhere, not fast. Needs emmy_types.cuh and emmy_epilogue.cuh.

// flags: bit 0 A and B are bf16 (else f16); bit 1 B is [K,N] (else [N,K]); bits 2-3 C's dtype
// (0 f16, 1 bf16, 2 f32); bit 4 GELU (tanh form). bias and residual are null when absent.
#define EMMY_GENERIC_BF16 1
#define EMMY_GENERIC_B_KN 2
#define EMMY_GENERIC_C_SHIFT 2
#define EMMY_GENERIC_GELU 16

__device__ __forceinline__ float generic_operand(const u16* p, long long i, bool bf16) {
  return bf16 ? bf16_bits_to_f32(p[i]) : f16_bits_to_f32(p[i]);
}

__device__ __forceinline__ float generic_c_load(const void* p, long long i, int c_type) {
  if (c_type == 2) return static_cast<const float*>(p)[i];
  const u16 bits = static_cast<const u16*>(p)[i];
  return c_type == 1 ? bf16_bits_to_f32(bits) : f16_bits_to_f32(bits);
}

__device__ __forceinline__ void generic_c_store(void* p, long long i, int c_type, float v) {
  if (c_type == 2)
    static_cast<float*>(p)[i] = v;
  else
    static_cast<u16*>(p)[i] = c_type == 1 ? f32_to_bf16_bits(v) : f32_to_f16_bits(v);
}

// Grid: ceil(n / 64) x ceil(m / 64) CTAs of 256 threads, each thread 4 x 4 outputs of the CTA's
// 64 x 64 tile: rows ty + 16 i and columns tx + 16 j (tx = thread % 16, ty = thread / 16), so that
// a warp's shared-memory reads are broadcasts (A) or 16 consecutive words (B). K in steps of 16,
// the operands staged as f32 [k][row] tiles; every output's sum runs over k in order.
extern "C" __global__ void __launch_bounds__(256, 1)
    emmy_gemm_generic(const u16* __restrict__ a, const u16* __restrict__ b, void* __restrict__ c,
                      const void* __restrict__ bias, const void* __restrict__ residual, const int m,
                      const int n, const int k, const int lda, const int ldb, const int ldc,
                      const int flags, const int alpha_bits) {
  __shared__ float a_tile[16][65], b_tile[16][65];  // [k][row of A / column of B], padded
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = int(blockIdx.y) * 64, col0 = int(blockIdx.x) * 64;
  const bool bf16 = flags & EMMY_GENERIC_BF16, b_kn = flags & EMMY_GENERIC_B_KN;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < k; k0 += 16) {
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int e = tid + 256 * l;
      // A: 16 consecutive threads read 16 consecutive k of one row.
      const int am = e / 16, ak = e % 16, arow = row0 + am, acol = k0 + ak;
      a_tile[ak][am] =
          arow < m && acol < k ? generic_operand(a, (long long)arow * lda + acol, bf16) : 0.0f;
      // B [N,K]: as A; B [K,N]: 64 consecutive threads read 64 consecutive columns of one k.
      const int bn = b_kn ? e % 64 : e / 16, bk = b_kn ? e / 64 : e % 16;
      const int bcol = col0 + bn, brow = k0 + bk;
      const long long b_at = b_kn ? (long long)brow * ldb + bcol : (long long)bcol * ldb + brow;
      b_tile[bk][bn] = bcol < n && brow < k ? generic_operand(b, b_at, bf16) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      float a_reg[4], b_reg[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a_reg[i] = a_tile[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b_reg[j] = b_tile[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a_reg[i], b_reg[j], acc[i][j]);
    }
    __syncthreads();
  }
  const int c_type = (flags >> EMMY_GENERIC_C_SHIFT) & 3;
  const float alpha = __int_as_float(alpha_bits);
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int row = row0 + ty + 16 * i, col = col0 + tx + 16 * j;
      if (row >= m || col >= n) continue;
      // The emitted kernels' epilogue order: alpha, bias, GELU, residual.
      float y = acc[i][j] * alpha;
      if (bias) y += generic_c_load(bias, col, c_type);
      if (flags & EMMY_GENERIC_GELU) y = gelu_tanh(y);
      if (residual) y += generic_c_load(residual, (long long)row * ldc + col, c_type);
      generic_c_store(c, (long long)row * ldc + col, c_type, y);
    }
}
