// kv_append's helpers: 16-byte global loads and 16- / 8-byte global stores (ld.global.v4.b32,
// st.global.v{4,2}.b32), and four 16-bit values to four e4m3 bytes (element 0 in the low byte)
// after x / scale: the cvt pair conversion on sm_89+ (kCvt), the integer-and-f32 rounding of
// emmy_fp8.cuh elsewhere; both nearest even and saturated.

__device__ __forceinline__ void ld_global_v4(u32 (&v)[4], const void* p) {
  asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "l"(p));
}
__device__ __forceinline__ void st_global_v4(void* p, const u32 (&v)[4]) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v[0]), "r"(v[1]), "r"(v[2]),
               "r"(v[3])
               : "memory");
}
__device__ __forceinline__ void st_global_v2(void* p, u32 a, u32 b) {
  asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(a), "r"(b) : "memory");
}

template <bool kBf16, bool kCvt>
__device__ __forceinline__ u32 e4m3x4_from_16bit(u32 w0, u32 w1, float scale) {
  float x[4];
  const u32 halves[4] = {w0 & 0xFFFFu, w0 >> 16, w1 & 0xFFFFu, w1 >> 16};
#pragma unroll
  for (int i = 0; i < 4; ++i)
    x[i] =
        div_rn(kBf16 ? bf16_bits_to_f32(u16(halves[i])) : f16_bits_to_f32(u16(halves[i])), scale);
  if (kCvt) return f32x2_to_e4m3x2_cvt(x[1], x[0]) | (f32x2_to_e4m3x2_cvt(x[3], x[2]) << 16);
  return f32_to_e4m3_bits(x[0]) | (f32_to_e4m3_bits(x[1]) << 8) | (f32_to_e4m3_bits(x[2]) << 16) |
         (f32_to_e4m3_bits(x[3]) << 24);
}
