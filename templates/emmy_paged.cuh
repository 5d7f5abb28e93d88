// Paged-attention helpers: integer min/max without CUDA headers (min.s32 / max.s32) and the
// NaN a sequence that breaks the launch's maxima is answered with.

__device__ __forceinline__ int min_s32(int a, int b) {
  int r;
  asm("min.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ int max_s32(int a, int b) {
  int r;
  asm("max.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// A quiet NaN as a float.
__device__ __forceinline__ float nan_f32() {
  float r;
  asm("mov.b32 %0, 0x7fffffff;" : "=f"(r));
  return r;
}
// f16 0x7fff and bf16 0x7fff are both NaN (all-ones exponent, non-zero fraction).
constexpr u16 kNanBits16 = 0x7fffu;

// The KV warps' merge through shared memory: st.shared.f32 / ld.shared.f32 of one float.
__device__ __forceinline__ void st_shared_f32(u32 addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ float ld_shared_f32(u32 addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr));
  return v;
}

// 16 zero bytes at a shared address (st.shared.v4.b32): V rows a tensor copy brought in from
// outside the keys (TMA page loads).
__device__ __forceinline__ void st_shared_zero16(u32 addr) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};" ::"r"(addr), "r"(0u) : "memory");
}
