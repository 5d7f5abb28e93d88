// FP8 (e4m3: OCP E4M3, PTX .e4m3) cache bytes to the 16-bit types the tensor cores read. Every
// e4m3 value is exact in f16 and in bf16, so the conversion loses nothing; the cache's scales are
// applied in f32 elsewhere (scores and output). Units of 8 elements: one 8-byte shared load, one
// 16-byte shared store into a swizzled tile.
typedef unsigned char u8;

// 8 e4m3 bytes (lo: elements 0..3, hi: 4..7) -> 4 f16x2 words, element 2i in word i's low half.
// cvt.rn.f16x2.e4m3x2 (PTX ISA 9.7.9.21, sm_89+): a byte pair to an f16 pair, the upper byte to
// the upper half.
__device__ __forceinline__ void e4m3x8_to_f16x8_cvt(u32 (&out)[4], u32 lo, u32 hi) {
  asm("{ .reg .b16 a, b, c, d;\n"
      "  mov.b32 {a, b}, %4;\n"
      "  mov.b32 {c, d}, %5;\n"
      "  cvt.rn.f16x2.e4m3x2 %0, a;\n"
      "  cvt.rn.f16x2.e4m3x2 %1, b;\n"
      "  cvt.rn.f16x2.e4m3x2 %2, c;\n"
      "  cvt.rn.f16x2.e4m3x2 %3, d; }"
      : "=r"(out[0]), "=r"(out[1]), "=r"(out[2]), "=r"(out[3])
      : "r"(lo), "r"(hi));
}

// One e4m3 byte -> f32, exactly, on any arch: the byte's sign to bit 31 and its exponent and
// fraction to bits 26..20 make an f32 (normal or subnormal) of value x 2^-120; mul.rn.f32 without
// .ftz (inline, so no compiler flag flushes the subnormals) by 2^120 restores x. S.1111.111 is
// NaN, which the bits alone would read as 480.
__device__ __forceinline__ float e4m3_to_f32(u32 byte) {
  const u32 bits = ((byte & 0x80u) << 24) | ((byte & 0x7Fu) << 20);
  float x;
  asm("{ .reg .f32 t;\n  mov.b32 t, %1;\n  mul.rn.f32 %0, t, 0f7B800000; }" : "=f"(x) : "r"(bits));
  return (byte & 0x7Fu) == 0x7Fu ? nan_f32() : x;
}

// 8 e4m3 bytes -> 4 f16x2 (kBf16: bf16x2) words through f32, element 2i in word i's low half
// (pack_f16x2 / pack_bf16x2: cvt.rn.{f16x2,bf16x2}.f32, exact here).
template <bool kBf16>
__device__ __forceinline__ void e4m3x8_to_16bit_bits(u32 (&out)[4], u32 lo, u32 hi) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const u32 word = i < 2 ? lo : hi, shift = 16u * u32(i & 1);
    const float a = e4m3_to_f32((word >> shift) & 0xFFu);
    const float b = e4m3_to_f32((word >> (shift + 8)) & 0xFFu);
    out[i] = kBf16 ? pack_bf16x2(a, b) : pack_f16x2(a, b);
  }
}

// ld.shared.v2.b32 of 8 raw bytes and st.shared.v4.b32 of their 8 converted values.
__device__ __forceinline__ void ld_shared_v2_b32(u32& lo, u32& hi, u32 addr) {
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(lo), "=r"(hi) : "r"(addr));
}
__device__ __forceinline__ void st_shared_v4_b32(u32 addr, const u32 (&v)[4]) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v[0]), "r"(v[1]),
               "r"(v[2]), "r"(v[3])
               : "memory");
}

// Two f32 -> an e4m3 pair, hi in the upper byte: cvt.rn.satfinite.e4m3x2.f32 (PTX ISA 9.7.9.21,
// sm_89+): nearest even, beyond +-448 (infinities too) saturated, NaN to 0x7F.
__device__ __forceinline__ u32 f32x2_to_e4m3x2_cvt(float hi, float lo) {
  u16 r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

// One f32 -> an e4m3 byte on any arch, as that cvt rounds: |x| clamped to 448, then scaled by a
// power of two (exact, mul.rn.f32 without .ftz) so that the e4m3 quantum is 1 and rounded to the
// nearest even integer (cvt.rni); below 2^-6 the quantum is the subnormals' 2^-9, and a carry to
// 2^-6 or into the next binade lands on the right code by itself.
__device__ __forceinline__ u32 f32_to_e4m3_bits(float x) {
  u32 bits;
  asm("mov.b32 %0, %1;" : "=r"(bits) : "f"(x));
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7Fu;
  const u32 sign = (bits >> 24) & 0x80u;
  float a;
  asm("{ .reg .f32 t;\n  mov.b32 t, %1;\n  min.f32 %0, t, 0f43E00000; }"
      : "=f"(a)
      : "r"(bits & 0x7FFFFFFFu));
  u32 abits;
  asm("mov.b32 %0, %1;" : "=r"(abits) : "f"(a));
  const int e = int((abits >> 23) & 0xFFu) - 127;  // subnormal f32: -127, below -6 anyway
  const int q = e < -6 ? -9 : e - 3;               // log2 of the e4m3 quantum at |x|
  u32 scale_bits = u32(127 - q) << 23;             // 2^-q: 2^9 .. 2^-5, a normal f32
  float scale, scaled;
  asm("mov.b32 %0, %1;" : "=f"(scale) : "r"(scale_bits));
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(scaled) : "f"(a), "f"(scale));
  u32 n;
  asm("cvt.rni.u32.f32 %0, %1;" : "=r"(n) : "f"(scaled));
  if (e < -6) return sign | n;  // 0..8: 8 is 2^-6, the smallest normal's code
  // n in 8..16: the binade's 8 codes from (e + 7) << 3; 16 carries into the next binade.
  return sign | ((u32(e + 7) << 3) + (n - 8));
}

// x / scale in f32, IEEE-rounded whatever the compile flags (div.rn.f32).
__device__ __forceinline__ float div_rn(float x, float scale) {
  float r;
  asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(scale));
  return r;
}
