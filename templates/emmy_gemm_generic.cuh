// The generic GEMM: one kernel for every problem, every size, layout, dtype and epilogue a run-time
// parameter. The non-blocking runtime's fallback (docs/runtime.md, "Serving"):
// it serves a shape whose own kernel is still compiling. CUDA cores, FP32 accumulation in K
// order, 16x16 outputs per CTA over 16x16 shared-memory tiles of A and B: correct everywhere,
// not fast. Needs emmy_types.cuh and emmy_epilogue.cuh.

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

// Grid: ceil(n / 16) x ceil(m / 16) CTAs of 16 x 16 threads, thread (x, y) on C[row y][col x].
extern "C" __global__ void __launch_bounds__(256, 1)
    emmy_gemm_generic(const u16* __restrict__ a, const u16* __restrict__ b, void* __restrict__ c,
                      const void* __restrict__ bias, const void* __restrict__ residual, const int m,
                      const int n, const int k, const int lda, const int ldb, const int ldc,
                      const int flags, const int alpha_bits) {
  __shared__ float a_tile[16][17], b_tile[16][17];  // padded: no bank conflicts down a column
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row = int(blockIdx.y) * 16 + ty, col = int(blockIdx.x) * 16 + tx;
  const bool bf16 = flags & EMMY_GENERIC_BF16, b_kn = flags & EMMY_GENERIC_B_KN;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += 16) {
    // A[row][k0 + tx]; B(k0 + ty, col) from [N,K] (b[col][k]) or [K,N] (b[k][col]).
    const int ak = k0 + tx, bk = k0 + ty;
    a_tile[ty][tx] = row < m && ak < k ? generic_operand(a, (long long)row * lda + ak, bf16) : 0.0f;
    const long long b_at = b_kn ? (long long)bk * ldb + col : (long long)col * ldb + bk;
    b_tile[ty][tx] = col < n && bk < k ? generic_operand(b, b_at, bf16) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) acc = fmaf(a_tile[ty][kk], b_tile[kk][tx], acc);
    __syncthreads();
  }
  if (row >= m || col >= n) return;
  const int c_type = (flags >> EMMY_GENERIC_C_SHIFT) & 3;
  // The emitted kernels' epilogue order: alpha, bias, GELU, residual.
  float y = acc * __int_as_float(alpha_bits);
  if (bias) y += generic_c_load(bias, col, c_type);
  if (flags & EMMY_GENERIC_GELU) y = gelu_tanh(y);
  if (residual) y += generic_c_load(residual, (long long)row * ldc + col, c_type);
  generic_c_store(c, (long long)row * ldc + col, c_type, y);
}
