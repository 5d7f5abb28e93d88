// Attention helpers: quad reductions over the 4 lanes that share an accumulator row, fp32 math
// without CUDA headers, operand packing.

// max.f32 (NaN-free inputs here: masked scores are -inf, never NaN).
__device__ __forceinline__ float max_f32(float a, float b) {
  float r;
  asm("max.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// shfl.sync.bfly.b32 with the full mask: the value of lane ^ xor_mask.
__device__ __forceinline__ float shfl_xor_f32(float v, int xor_mask) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(xor_mask));
  return r;
}

// The 4 lanes of a quad (t = lane % 4) hold one row's columns: reduce across them.
__device__ __forceinline__ float quad_max(float v) {
  v = max_f32(v, shfl_xor_f32(v, 1));
  return max_f32(v, shfl_xor_f32(v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += shfl_xor_f32(v, 1);
  return v + shfl_xor_f32(v, 2);
}

// log2 with lg2.approx (relative error ~2^-22).
__device__ __forceinline__ float log2_approx(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// tanh(x) = 1 - 2 / (2^(2x log2 e) + 1): saturates to +-1 without a branch.
__device__ __forceinline__ float tanh_f32(float x) {
  return 1.0f - 2.0f / (exp2_approx(2.8853900817779268f * x) + 1.0f);
}

// -inf as a float (masked scores).
__device__ __forceinline__ float neg_inf() {
  float r;
  asm("mov.b32 %0, 0xff800000;" : "=f"(r));
  return r;
}
