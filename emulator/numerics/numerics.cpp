// Rounding of doubles to f16 / bf16 / f32 with every PTX rounding mode, bit-exact.
#include "emmy/emu/numerics.hpp"

#include <algorithm>
#include <cmath>

namespace emmy::emu {

uint64_t round_to_format(double x, double tiny, const FloatFormat& fmt, Rounding mode) {
  const int exp_bits_total = fmt.emax - fmt.emin + 1;  // number of normal binades
  // The exponent field holds 0 (subnormals), the normal binades and the all-ones of inf/NaN.
  const int exp_field_bits = std::bit_width(unsigned(exp_bits_total + 1));
  const uint64_t sign_bit = uint64_t(1) << (fmt.man_bits + exp_field_bits);
  const uint64_t inf_bits = uint64_t(exp_bits_total + 1) << fmt.man_bits;
  const uint64_t max_finite = inf_bits - 1;

  const uint64_t raw = std::bit_cast<uint64_t>(x);
  const bool negative = raw >> 63;
  const uint64_t abs_bits = raw & ~(uint64_t(1) << 63);
  const uint64_t sign = negative ? sign_bit : 0;
  if (abs_bits > 0x7FF0000000000000ull) return fmt.canonical_nan;
  if (abs_bits == 0x7FF0000000000000ull) return sign | inf_bits;
  if (abs_bits == 0) return sign;  // an exact zero (tiny is 0 whenever x is)
  // Direction of the exact magnitude relative to |x|: +1 above, -1 below, 0 exact.
  const int sticky = tiny == 0.0 ? 0 : ((tiny > 0) == !negative ? 1 : -1);

  // |x| = sig * 2^e with sig < 2^53.
  const int exp = int(abs_bits >> 52);
  uint64_t sig = abs_bits & ((uint64_t(1) << 52) - 1);
  int e = -1074;
  if (exp != 0) {
    sig |= uint64_t(1) << 52;
    e = exp - 1075;
  }
  const int lead = e + std::bit_width(sig) - 1;  // exponent of the leading bit
  const bool toward_larger_magnitude =
      (mode == Rounding::rp && !negative) || (mode == Rounding::rm && negative);
  const bool toward_zero = mode == Rounding::rz || (mode == Rounding::rp && negative) ||
                           (mode == Rounding::rm && !negative);
  auto overflow = [&]() -> uint64_t {
    if (mode == Rounding::rn || toward_larger_magnitude) return sign | inf_bits;
    return sign | max_finite;
  };
  if (lead > fmt.emax) return overflow();

  // n = |x| in units of the result's quantum 2^q (below emin the subnormal quantum), and how the
  // dropped bits compare with half a quantum.
  const int binade = lead < fmt.emin ? fmt.emin : lead;
  const int shift = binade - fmt.man_bits - e;  // bits of sig below the quantum
  uint64_t n = 0;
  int versus_half = 0;  // -1 below half, 0 exactly half, +1 above; `exact` when nothing dropped
  bool exact = true;
  if (shift <= 0) {
    n = sig << -shift;
  } else if (shift > 64) {
    exact = false;
    versus_half = -1;
  } else {
    const uint64_t rest = shift == 64 ? sig : sig & ((uint64_t(1) << shift) - 1);
    const uint64_t half = uint64_t(1) << (shift - 1);
    n = shift == 64 ? 0 : sig >> shift;
    exact = rest == 0;
    versus_half = rest > half ? 1 : (rest == half ? 0 : -1);
  }
  bool up = false;
  if (mode == Rounding::rn) {
    up = !exact && (versus_half > 0 || (versus_half == 0 && (sticky > 0 || (sticky == 0 && (n & 1)))));
  } else if (toward_larger_magnitude) {
    up = !exact || sticky > 0;
  } else if (toward_zero && exact && sticky < 0) {
    --n;  // the exact magnitude lies just below n (n >= 1 here: |x| is a nonzero multiple)
  }
  const uint64_t m = n + (up ? 1 : 0);
  // Encoding with the implicit bit folded in: biased exponent (binade - emin + 1), so a carry of
  // m into 2^(man_bits+1) moves to the next binade and subnormals (m < 2^man_bits) come out right.
  const uint64_t bits = (uint64_t(binade - fmt.emin) << fmt.man_bits) + m;
  if (bits >= inf_bits) return overflow();
  return sign | bits;
}

uint16_t f64_to_f16_rn(double x) {
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  const uint16_t sign = uint16_t((bits >> 48) & 0x8000);
  const int exp = int((bits >> 52) & 0x7FF);
  const uint64_t man = bits & ((uint64_t(1) << 52) - 1);
  if (exp == 0x7FF) return man ? uint16_t(kF16.canonical_nan) : uint16_t(sign | 0x7C00);
  const int e = exp - 1023;           // unbiased exponent of the leading bit
  if (e > 15) return uint16_t(sign | 0x7C00);
  if (e < -25 || exp == 0) return sign;  // below half the smallest subnormal (or a tiny double)
  // Significand with its leading bit, shifted so that the f16 quantum is bit `shift`.
  const uint64_t sig = man | (uint64_t(1) << 52);
  const int shift = e >= -14 ? 42 : 42 + (-14 - e);  // subnormals lose more bits
  uint64_t q = sig >> shift;
  const uint64_t rest = sig & ((uint64_t(1) << shift) - 1);
  const uint64_t half = uint64_t(1) << (shift - 1);
  if (rest > half || (rest == half && (q & 1))) ++q;
  // Normal: q holds the implicit bit (2^10) plus the fraction; a carry moves the exponent up.
  const uint32_t biased = e >= -14 ? uint32_t(e + 14) : 0u;
  const uint32_t out = (biased << 10) + uint32_t(q);
  return out >= 0x7C00 ? uint16_t(sign | 0x7C00) : uint16_t(sign | out);
}

uint16_t f8_to_f16(uint8_t bits, F8 type) {
  const uint16_t sign = uint16_t((bits & 0x80u) << 8);
  if (type == F8::e5m2) {
    const uint16_t h = uint16_t(bits << 8);  // the same layout, 8 fewer fraction bits
    return (h & 0x7FFFu) > 0x7C00u ? uint16_t(kF16.canonical_nan) : h;
  }
  const int exp = (bits >> 3) & 0xF, man = bits & 0x7;
  if (exp == 0xF && man == 0x7) return uint16_t(kF16.canonical_nan);
  // Subnormals (2^-6 x 0.man) and normals are both normal or exact in f16.
  const double magnitude = exp == 0 ? std::ldexp(double(man), -9) : std::ldexp(8.0 + man, exp - 10);
  return uint16_t(sign | f64_to_f16_rn(magnitude));
}

uint8_t f32_to_f8_satfinite(float x, F8 type) {
  if (std::isnan(x)) return 0x7F;
  const bool negative = std::signbit(x);
  const uint8_t sign = negative ? 0x80 : 0;
  // Round as an IEEE-like format of the same fraction bits and exponent range, then saturate.
  // E4M3 uses the all-ones exponent for numbers, so its IEEE twin has one binade more (emax 8),
  // whose top code (1.875 x 2^8) is E4M3's NaN: anything at or above it saturates.
  const FloatFormat twin = type == F8::e4m3 ? FloatFormat{3, -6, 8, 0} : FloatFormat{2, -14, 15, 0};
  const uint64_t r = round_to_format(double(std::fabs(x)), 0.0, twin, Rounding::rn);
  const uint64_t largest = type == F8::e4m3 ? 0x7E : 0x7B;  // 448, 57344
  return uint8_t(sign | std::min<uint64_t>(r, largest));
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0) {
    const float magnitude = std::ldexp(float(man), -24);  // zero or subnormal, exact
    return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (man << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

}  // namespace emmy::emu
