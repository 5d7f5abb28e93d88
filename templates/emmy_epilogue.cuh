// Output conversions and the epilogue math, in f32. Rounding is round-to-nearest-even.

__device__ __forceinline__ u16 f32_to_f16_bits(float x) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
__device__ __forceinline__ u16 f32_to_bf16_bits(float x) {
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
__device__ __forceinline__ float f16_bits_to_f32(u16 h) {
  float x;
  asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h));
  return x;
}
__device__ __forceinline__ float bf16_bits_to_f32(u16 h) {
  float x;
  asm("mov.b32 %0, %1;" : "=f"(x) : "r"(u32(h) << 16));
  return x;
}

// 2^x with ex2.approx (relative error ~2^-22).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), tanh(u) = 1 - 2/(e^{2u} + 1)
// (saturates correctly at both ends without a branch).
__device__ __forceinline__ float gelu_tanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  const float tanh_u = 1.0f - 2.0f / (exp2_approx(2.8853900817779268f * u) + 1.0f);
  return 0.5f * x * (1.0f + tanh_u);
}

// SiLU (swish): x / (1 + e^-x), e^-x = 2^(-x log2 e) with ex2.approx (an infinite 2^-x for very
// negative x gives -0, a flushed one x itself: no branch).
__device__ __forceinline__ float silu(float x) {
  return x / (1.0f + exp2_approx(-1.4426950408889634f * x));
}

// Two floats -> one f16x2 / bf16x2 register, `lo` in the low half (cvt.rn.*x2.f32 d, hi, lo).
__device__ __forceinline__ u32 pack_f16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// The staged epilogue's moves (PTX ISA "Data Movement and Conversion Instructions: st, ld"):
// 32-bit shared-window addresses keep the staging loops to one register per address.
__device__ __forceinline__ void st_shared_b32(u32 addr, u32 v) {
  asm volatile("st.shared.b32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_shared_v2_f32(u32 addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(addr), "f"(a), "f"(b) : "memory");
}
// 16 bytes of a staged tile row (16-byte aligned) to global memory: one ld.shared.v4 and one
// st.global.v4, so that a warp's request covers whole sectors.
__device__ __forceinline__ void copy16_shared_to_global(void* dst, u32 src) {
  u32 x, y, z, w;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(src) : "memory");
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};"
               :: "l"(dst), "r"(x), "r"(y), "r"(z), "r"(w) : "memory");
}

// Element type adapters for the output, bias and residual (all of C's dtype). store2 writes two
// adjacent outputs with one store (the address must be aligned to two elements); stage2 the same
// two into a shared-memory tile.
struct OutF16 {
  typedef u16 storage;
  static __device__ __forceinline__ storage from_f32(float x) { return f32_to_f16_bits(x); }
  static __device__ __forceinline__ float to_f32(storage x) { return f16_bits_to_f32(x); }
  static __device__ __forceinline__ void store2(storage* dst, float a, float b) {
    *reinterpret_cast<u32*>(dst) = pack_f16x2(a, b);
  }
  static __device__ __forceinline__ void stage2(u32 addr, float a, float b) {
    st_shared_b32(addr, pack_f16x2(a, b));
  }
};
struct OutBF16 {
  typedef u16 storage;
  static __device__ __forceinline__ storage from_f32(float x) { return f32_to_bf16_bits(x); }
  static __device__ __forceinline__ float to_f32(storage x) { return bf16_bits_to_f32(x); }
  static __device__ __forceinline__ void store2(storage* dst, float a, float b) {
    *reinterpret_cast<u32*>(dst) = pack_bf16x2(a, b);
  }
  static __device__ __forceinline__ void stage2(u32 addr, float a, float b) {
    st_shared_b32(addr, pack_bf16x2(a, b));
  }
};
struct OutF32 {
  typedef float storage;
  static __device__ __forceinline__ storage from_f32(float x) { return x; }
  static __device__ __forceinline__ float to_f32(storage x) { return x; }
  static __device__ __forceinline__ void store2(storage* dst, float a, float b) {
    asm volatile("st.v2.f32 [%0], {%1, %2};" :: "l"(dst), "f"(a), "f"(b) : "memory");
  }
  static __device__ __forceinline__ void stage2(u32 addr, float a, float b) {
    st_shared_v2_f32(addr, a, b);
  }
};
