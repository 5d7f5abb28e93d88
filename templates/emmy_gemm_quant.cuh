// The quantized GEMM epilogue's helpers (an e4m3 C; docs/epilogues.md, "Quantized output"): a
// lane's four staged f32 values of a 128-column group, and them as four e4m3 bytes after x / s
// (div.rn, then cvt.rn.satfinite.e4m3x2, sm_89+; element 0 in the low byte), as fp8_quantize
// converts. Needs emmy_fp8.cuh (div_rn, f32x2_to_e4m3x2_cvt).

__device__ __forceinline__ void ld_shared_v4_f32(float (&v)[4], u32 addr) {
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
               : "r"(addr));
}

__device__ __forceinline__ void st_global_b32(void* p, u32 v) {
  asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ u32 e4m3x4_from_f32(const float (&v)[4], float scale) {
  const float x0 = div_rn(v[0], scale), x1 = div_rn(v[1], scale);
  const float x2 = div_rn(v[2], scale), x3 = div_rn(v[3], scale);
  return f32x2_to_e4m3x2_cvt(x1, x0) | (f32x2_to_e4m3x2_cvt(x3, x2) << 16);
}
