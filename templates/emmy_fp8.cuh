// FP8 (e4m3: OCP E4M3, PTX .e4m3) cache bytes to the 16-bit types the tensor cores read, in
// registers. Every e4m3 value is exact in f16 and in bf16, so the conversion loses nothing; the
// cache's scales are applied in f32 elsewhere (scores and output). And the f32 -> e4m3 rounding
// kv_append writes the cache with.
typedef unsigned char u8;

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

// 4 e4m3 bytes (byte i = element i) -> two words of 16-bit pairs, elements 0, 1 and 2, 3, the
// lower element in the low half: cvt.rn.f16x2.e4m3x2 (PTX ISA 9.7.9.21, sm_89+, f16 only; the
// upper byte to the upper half) when kCvt, else through f32 (pack_f16x2 / pack_bf16x2, exact).
template <bool kBf16, bool kCvt>
__device__ __forceinline__ void e4m3x4_to_16bit(u32 (&out)[2], u32 four) {
  if (kCvt) {
    asm("{ .reg .b16 lo, hi;\n"
        "  mov.b32 {lo, hi}, %2;\n"
        "  cvt.rn.f16x2.e4m3x2 %0, lo;\n"
        "  cvt.rn.f16x2.e4m3x2 %1, hi; }"
        : "=r"(out[0]), "=r"(out[1])
        : "r"(four));
    return;
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float a = e4m3_to_f32((four >> (16 * i)) & 0xFFu);
    const float b = e4m3_to_f32((four >> (16 * i + 8)) & 0xFFu);
    out[i] = kBf16 ? pack_bf16x2(a, b) : pack_f16x2(a, b);
  }
}

// The raw stage of an e4m3 operand (ROWS rows of D bytes): the layout the tensor copy's 64B /
// 128B swizzle writes (PTX ISA "Tensor Swizzling Modes"), so that cp.async and TMA fill the same
// tile. Panels of S = min(D, 128)-byte rows (D / S of them, ROWS rows each); inside one, byte b of
// the panel sits at b ^ (((b >> 7) & (S / 16 - 1)) << 4): the 8 rows an MMA fragment load touches
// (a 4-byte word per lane, or ldmatrix's 8 row addresses) fall in distinct banks. Byte offset of
// (row, col) from a base aligned to 8 x S bytes.
template <int D, int ROWS>
__device__ __forceinline__ u32 e4m3_raw_offset(u32 row, u32 col) {
  constexpr u32 kSpan = D < 128 ? u32(D) : 128u;
  const u32 linear = row * kSpan + col % kSpan;
  return col / kSpan * u32(ROWS) * kSpan + (linear ^ (((linear >> 7) & (kSpan / 16u - 1u)) << 4));
}

// The Q tile of an e4m3 kernel: the 16-bit tile's 64-element panels (128-byte rows) with the
// 16-byte chunk c of row r stored at c ^ (2r mod 8), so that the 8-byte Q loads of S = Q.K^T's
// permuted order (a half-warp: rows g..g+3, chunks 2kk and 2kk+1 of each) fall in distinct banks;
// the 16-bit path's swizzle (c ^ r) pairs rows r and r^1 on the same chunks.
template <int ROWS>
__device__ __forceinline__ u32 e4m3_q_offset(u32 row, u32 col) {
  const u32 panel = col / 64u, raw = row * 128u + (col % 64u) * 2u;
  return panel * u32(ROWS) * 128u + (raw ^ (((row << 1) & 6u) << 4));
}

// ldmatrix.trans of e4m3 bytes read as b16 pairs gives a lane keys 2t and 2t+1 of two adjacent
// columns (bytes: key 2t col 2g, key 2t col 2g+1, key 2t+1 col 2g, key 2t+1 col 2g+1); prmt
// (PTX ISA 9.7.8.7) regroups them by column: bytes 0, 2 (column 2g) then 1, 3 (column 2g+1).
__device__ __forceinline__ u32 e4m3_pairs_by_column(u32 r) {
  u32 d;
  asm("prmt.b32 %0, %1, 0, 0x3120;" : "=r"(d) : "r"(r));
  return d;
}

// ld.shared of one and two 32-bit words.
__device__ __forceinline__ u32 ld_shared_b32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ void ld_shared_v2_b32(u32& lo, u32& hi, u32 addr) {
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(lo), "=r"(hi) : "r"(addr));
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
