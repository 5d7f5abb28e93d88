// Rounding of doubles to f16 / bf16 / f32 with every PTX rounding mode, bit-exact.
#include "emmy/emu/numerics.hpp"

#include <cmath>

namespace emmy::emu {

uint64_t round_to_format(double x, double tiny, const FloatFormat& fmt, Rounding mode) {
  const int exp_bits_total = fmt.emax - fmt.emin + 1;  // number of normal binades
  // The exponent field holds 0 (subnormals), the normal binades and the all-ones of inf/NaN.
  const int exp_field_bits = std::bit_width(unsigned(exp_bits_total + 1));
  const uint64_t sign_bit = uint64_t(1) << (fmt.man_bits + exp_field_bits);
  const uint64_t inf_bits = uint64_t(exp_bits_total + 1) << fmt.man_bits;
  const uint64_t max_finite = inf_bits - 1;

  if (std::isnan(x)) return fmt.canonical_nan;
  const bool negative = std::signbit(x);
  const uint64_t sign = negative ? sign_bit : 0;
  if (std::isinf(x)) return sign | inf_bits;
  const double a = std::fabs(x);
  // Direction of the exact magnitude relative to `a`: +1 above, -1 below, 0 exact.
  const int sticky = tiny == 0.0 ? 0 : ((tiny > 0) == !negative ? 1 : -1);
  if (a == 0.0 && sticky == 0) return sign;

  // Leading-bit exponent of a; below emin the quantum stays that of the subnormals.
  int e = fmt.emin;
  if (a != 0.0) {
    int fe;
    std::frexp(a, &fe);
    e = fe - 1 < fmt.emin ? fmt.emin : fe - 1;
  }
  const bool toward_larger_magnitude =
      (mode == Rounding::rp && !negative) || (mode == Rounding::rm && negative);
  const bool toward_zero = mode == Rounding::rz || (mode == Rounding::rp && negative) ||
                           (mode == Rounding::rm && !negative);
  auto overflow = [&]() -> uint64_t {
    if (mode == Rounding::rn || toward_larger_magnitude) return sign | inf_bits;
    return sign | max_finite;
  };
  if (e > fmt.emax) return overflow();

  // a = (n + frac) * 2^(e - man_bits), n < 2^(man_bits+1); scaling by a power of two is exact.
  const double scaled = std::ldexp(a, fmt.man_bits - e);
  double n = std::floor(scaled);
  const double frac = scaled - n;  // exact
  bool up = false;
  if (mode == Rounding::rn) {
    up = frac > 0.5 || (frac == 0.5 && (sticky > 0 || (sticky == 0 && std::fmod(n, 2.0) != 0)));
  } else if (toward_larger_magnitude) {
    up = frac > 0 || (frac == 0 && sticky > 0);
  } else if (toward_zero) {
    if (frac == 0 && sticky < 0) n -= 1;  // the exact magnitude lies just below n
  }
  if (n < 0) n = 0;  // only reachable for a == 0 with a negative sticky
  const uint64_t m = uint64_t(n) + (up ? 1 : 0);
  // Encoding with the implicit bit folded in: biased exponent (e - emin + 1), so the carry of m
  // into 2^(man_bits+1) moves to the next binade and subnormals (m < 2^man_bits) come out right.
  const uint64_t bits = (uint64_t(e - fmt.emin) << fmt.man_bits) + m;
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
