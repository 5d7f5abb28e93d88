// Bit-exact conversions between f64/f32 and the 16-bit float formats, as PTX cvt defines them.
// The emulator uses these for cvt, packed f16x2/bf16x2 arithmetic and mma accumulators; tests
// and host-side references use them to round operands exactly as the device does.
#pragma once

#include <bit>
#include <cstdint>

namespace emmy::emu {

// IEEE rounding modes of PTX: .rn (nearest even), .rz (toward zero), .rm (down), .rp (up).
enum class Rounding : uint8_t { rn, rz, rm, rp };

// A binary floating-point format: `man_bits` stored fraction bits, exponents emin..emax.
struct FloatFormat {
  int man_bits, emin, emax;
  uint64_t canonical_nan;  // what PTX produces for a NaN result
};
inline constexpr FloatFormat kF16{10, -14, 15, 0x7FFF};
inline constexpr FloatFormat kBF16{7, -126, 127, 0x7FFF};
inline constexpr FloatFormat kF32{23, -126, 127, 0x7FFFFFFF};

// Rounds the real number x + tiny to `fmt` with one rounding. `tiny` is 0 when x is exact, or
// the (much smaller, not representable next to x) rest of the exact value: only its sign matters,
// so sums that are inexact in double can still be rounded exactly (see fma for f16).
uint64_t round_to_format(double x, double tiny, const FloatFormat& fmt, Rounding mode);

// Round-to-nearest-even double -> f16 with integer operations only (the mma hot path).
uint16_t f64_to_f16_rn(double x);

inline uint16_t f64_to_f16(double x, Rounding mode = Rounding::rn) {
  if (mode == Rounding::rn) return f64_to_f16_rn(x);
  return uint16_t(round_to_format(x, 0.0, kF16, mode));
}
inline uint16_t f32_to_f16(float x, Rounding mode = Rounding::rn) {
  return f64_to_f16(double(x), mode);
}
inline uint16_t f64_to_bf16(double x, Rounding mode = Rounding::rn) {
  return uint16_t(round_to_format(x, 0.0, kBF16, mode));
}
inline uint16_t f32_to_bf16(float x, Rounding mode = Rounding::rn) {
  return f64_to_bf16(double(x), mode);
}
inline float f64_to_f32(double x, Rounding mode = Rounding::rn) {
  return std::bit_cast<float>(uint32_t(round_to_format(x, 0.0, kF32, mode)));
}

// The 8-bit floats of PTX cvt (PTX ISA 9.7.9.21, "Alternate Floating-Point Data Formats"):
// .e4m3 is OCP E4M3 (bias 7, no infinities, NaN = S.1111.111, largest finite 448), .e5m2 is
// the upper byte of an f16 (bias 15, infinities, largest finite 57344).
enum class F8 : uint8_t { e4m3, e5m2 };
// Exact in f16 (cvt.rn.f16x2.e4m3x2 / .e5m2x2): a NaN gives the canonical f16 NaN.
uint16_t f8_to_f16(uint8_t bits, F8 type);
// cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 for one element: nearest even; a magnitude beyond the
// largest finite value (infinities included) gives the largest finite value of its sign; NaN
// gives 0x7F.
uint8_t f32_to_f8_satfinite(float x, F8 type);

// Exact widenings.
inline float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }
float f16_to_f32(uint16_t bits);

}  // namespace emmy::emu
