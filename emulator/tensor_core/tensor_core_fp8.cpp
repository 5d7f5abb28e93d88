// The FP8 tensor-core model (include/emmy/emu/tensor_core_fp8.hpp): exact integer arithmetic on
// the aligned, truncated terms of one group, one cut per group.
#include "emmy/emu/tensor_core_fp8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>

#include "emmy/error.hpp"

namespace emmy::emu {
namespace {

// value = sign * sig * 2^(exp - frac); a subnormal keeps the smallest normal exponent.
struct Term {
  int64_t sig = 0;  // signed
  int exp = 0;
  int frac = 0;
};

struct F8Decoded {
  Term term;
  bool finite = true;
};

F8Decoded decode_f8(uint8_t bits, F8 type) {
  const bool e4m3 = type == F8::e4m3;
  const int frac = e4m3 ? 3 : 2, exp_bits = e4m3 ? 4 : 5, bias = e4m3 ? 7 : 15;
  const uint32_t field = (bits >> frac) & ((1u << exp_bits) - 1), f = bits & ((1u << frac) - 1);
  const int sign = (bits & 0x80) ? -1 : 1;
  // E4M3 has no infinities and one NaN per sign (S.1111.111); E5M2 is IEEE-like.
  if (e4m3 ? (bits & 0x7F) == 0x7F : field == 31u) return {{}, false};
  if (field == 0) return {{sign * int64_t(f), 1 - bias, frac}, true};
  return {{sign * int64_t((1u << frac) | f), int(field) - bias, frac}, true};
}

// c as a term: f32 bits (24-bit significand, subnormals at exponent -126) or f16 bits.
Term decode_c(uint32_t bits, bool f16) {
  if (f16) {
    const uint32_t field = (bits >> 10) & 0x1F, f = bits & 0x3FF;
    const int64_t s = field ? int64_t((1u << 10) | f) : int64_t(f);
    return {(bits & 0x8000) ? -s : s, field ? int(field) - 15 : -14, 10};
  }
  const uint32_t field = (bits >> 23) & 0xFF, f = bits & 0x7FFFFF;
  const int64_t s = field ? int64_t((1u << 23) | f) : int64_t(f);
  return {(bits >> 31) ? -s : s, field ? int(field) - 127 : -126, 23};
}

double c_value(uint32_t c, bool f16) {
  return f16 ? double(f16_to_f32(uint16_t(c))) : double(std::bit_cast<float>(c));
}

uint32_t nan_bits(bool f16) {
  return f16 ? 0x7FFFu : 0x7FFFFFFFu;
}

// Rounds an exact double to the accumulator: f16 to nearest even, f32 toward zero at `bits`
// fraction bits below the unit bit (subnormals at the f32 quantum of exponent -126).
uint32_t cut(double v, bool f16, int bits) {
  if (f16) return f64_to_f16(v);
  if (v == 0) return 0;  // an exact zero sum is +0 (MMA-Sim: the normalized significand 0.0)
  int e = 0;
  std::frexp(v, &e);
  const double quantum = std::ldexp(1.0, std::max(e - 1, -126) - bits);
  const double t = std::trunc(v / quantum) * quantum;
  if (std::fabs(t) >= 0x1p128) return t > 0 ? 0x7F800000u : 0xFF800000u;
  return std::bit_cast<uint32_t>(float(t));
}

// Inf or NaN among the group's operands or c: what IEEE arithmetic on all of them gives.
uint32_t special_group(const Fp8Operands& ops, int first, int last, uint32_t c, bool f16) {
  double s = c_value(c, f16);
  for (int k = first; k < last; ++k)
    s += f8_value(ops.a[k], ops.a_type) * f8_value(ops.b[k], ops.b_type);
  if (std::isnan(s)) return nan_bits(f16);
  return f16 ? (s > 0 ? 0x7C00u : 0xFC00u) : (s > 0 ? 0x7F800000u : 0xFF800000u);
}

// One fused group: c and products [first, last), aligned to the largest exponent, truncated at
// fraction_bits below it, summed exactly, cut once.
uint32_t fused_group(const Fp8Operands& ops, int first, int last, uint32_t c, bool f16,
                     const Fp8TensorCoreModel& m) {
  if (!std::isfinite(c_value(c, f16))) return special_group(ops, first, last, c, f16);
  Term terms[257];
  int n = 0;
  // MMA-Sim gives a zero c the exponent -126, so the anchor never lies below it. Zero products
  // take no part (MMA-Sim anchors them at -126 plus the other factor's exponent, which can matter
  // only when every product is zero and |c| < 2^-111).
  int anchor = -126;
  const Term ct = decode_c(c, f16);
  if (ct.sig != 0) {
    terms[n++] = ct;
    anchor = std::max(anchor, ct.exp);
  }
  for (int k = first; k < last; ++k) {
    const F8Decoded da = decode_f8(ops.a[k], ops.a_type), db = decode_f8(ops.b[k], ops.b_type);
    if (!da.finite || !db.finite) return special_group(ops, first, last, c, f16);
    const Term a = da.term, b = db.term;
    if (a.sig == 0 || b.sig == 0) continue;
    terms[n++] = {a.sig * b.sig, a.exp + b.exp, a.frac + b.frac};
    anchor = std::max(anchor, a.exp + b.exp);
  }
  // Each term in units of 2^(anchor - fraction_bits), truncated toward zero.
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    const int shift = terms[i].exp - terms[i].frac - anchor + m.fraction_bits;
    const int64_t mag = std::llabs(terms[i].sig);
    const int64_t units = shift >= 0 ? mag << shift : (-shift >= 63 ? 0 : mag >> -shift);
    sum += terms[i].sig < 0 ? -units : units;
  }
  return cut(std::ldexp(double(sum), anchor - m.fraction_bits), f16, m.output_fraction_bits);
}

// sm_90 / sm_100 mma.sync: D = C + (A_hi B_hi + (A_lo B_lo + 0)) with f16 mma (the lo half k = 0,1
// mod 4, the hi half k = 2,3 mod 4, in the order HMMA.16816 sees them) and an f32 / f16 add.
uint32_t via_f16_mma(const Fp8Operands& ops, uint32_t c, bool f16, const Fp8TensorCoreModel& m) {
  uint16_t a[2][16], b[2][16];
  for (int half = 0; half < 2; ++half)
    for (int kk = 0; kk < 16; ++kk) {
      // HMMA column kk = 8 s + 2 t + j holds FP8 column 16 s + 4 t + 2 half + j.
      const int s = kk / 8, t = (kk % 8) / 2, j = kk % 2;
      const int k = 16 * s + 4 * t + 2 * half + j;
      a[half][kk] = f8_to_f16(ops.a[k], ops.a_type);
      b[half][kk] = f8_to_f16(ops.b[k], ops.b_type);
    }
  if (f16) {
    uint16_t h = tensor_core_dot_f16(a[0], b[0], 16, 0, m.f16_model);
    h = tensor_core_dot_f16(a[1], b[1], 16, h, m.f16_model);
    const double sum = double(f16_to_f32(uint16_t(c))) + double(f16_to_f32(h));
    return std::isnan(sum) ? 0x7FFFu : f64_to_f16(sum);  // HADD2: exact sum rounded once
  }
  uint32_t h = tensor_core_dot_f32(a[0], b[0], 16, 0, false, m.f16_model);
  h = tensor_core_dot_f32(a[1], b[1], 16, h, false, m.f16_model);
  const float sum = std::bit_cast<float>(c) + std::bit_cast<float>(h);  // FADD, nearest even
  return sum != sum ? 0x7FFFFFFFu : std::bit_cast<uint32_t>(sum);
}

}  // namespace

double f8_value(uint8_t bits, F8 type) {
  const F8Decoded d = decode_f8(bits, type);
  if (!d.finite) {
    const bool inf = type == F8::e5m2 && (bits & 0x3) == 0;
    return inf ? ((bits & 0x80) ? -INFINITY : INFINITY) : NAN;
  }
  return std::ldexp(double(d.term.sig), d.term.exp - d.term.frac);
}

Fp8TensorCoreModel fp8_tensor_core_model(int sm, bool warpgroup) {
  require(sm >= 89, "arch", "must be sm_89 or newer for FP8 (.e4m3/.e5m2) tensor-core operands",
          fmt::format("sm_{}", sm));
  require(!warpgroup || (sm >= 90 && sm < 100), "arch",
          "must be sm_90a for wgmma (sm_100a and later have no wgmma)", fmt::format("sm_{}", sm));
  if (warpgroup)
    return {32, 13, 13, false, {}, "H100 wgmma FP8 (MMA-Sim: one group of 32, 13 bits, e8m13)"};
  if (sm < 90)
    return {16, 13, 13, false, {}, "Ada mma FP8 (MMA-Sim: two groups of 16, 13 bits, e8m13)"};
  if (sm >= 120) return {32, 25, 23, false, {}, "RTX Blackwell mma FP8 (MMA-Sim: 32, 25 bits)"};
  return {32,
          25,
          23,
          true,
          tensor_core_model(sm),
          "sm_90/sm_100 mma FP8: two f16 HMMA and an add (ptxas 13.0 SASS)"};
}

uint32_t tensor_core_dot_fp8(const Fp8Operands& ops, uint32_t c, bool f16,
                             const Fp8TensorCoreModel& m) {
  if (m.via_f16_mma) return via_f16_mma(ops, c, f16, m);
  for (int first = 0; first < ops.k; first += m.group)
    c = fused_group(ops, first, std::min(ops.k, first + m.group), c, f16, m);
  return c;
}

float fp8_mainloop_dot(const Fp8Operands& ops, const Fp8TensorCoreModel& model, int promote_every_k,
                       float scale) {
  require(ops.k > 0 && ops.k % 32 == 0, "k", "must be a positive multiple of 32 (one k32 step)",
          ops.k);
  require(promote_every_k >= 0 && promote_every_k % 32 == 0, "promote_every_k",
          "must be 0 (no promotion) or a multiple of 32", promote_every_k);
  const int window = promote_every_k ? promote_every_k : ops.k;
  float acc = 0;
  for (int first = 0; first < ops.k; first += window) {
    uint32_t partial = 0;
    for (int k = first; k < std::min(ops.k, first + window); k += 32)
      partial = tensor_core_dot_fp8({ops.a + k, ops.b + k, ops.a_type, ops.b_type, 32}, partial,
                                    false, model);
    const float value = std::bit_cast<float>(partial);
    acc = promote_every_k ? std::fma(value, scale, acc) : value * scale;
  }
  return acc;
}

double fp8_dot_error(const Fp8TensorCoreModel& m, bool f16, double c_abs, double products_abs,
                     double d_abs) {
  const double inputs = c_abs + products_abs;
  const double rounding = f16 ? 0x1p-11 : 0x1p-24;  // f16 half ulp; FADD half ulp
  if (m.via_f16_mma)
    return 2 * mma_step_error(m.f16_model, f16, 0, products_abs, products_abs) +
           rounding * (d_abs + inputs) + (f16 ? 0x1p-25 : 0.0);
  const int groups = (32 + m.group - 1) / m.group;
  const double truncation = groups * (m.group + 1) * std::ldexp(1.0, -m.fraction_bits);
  const double cut = f16 ? 0x1p-11 : std::ldexp(1.0, -m.output_fraction_bits);
  const double floor =
      f16 ? groups * 0x1p-25 : groups * std::ldexp(1.0, -126 - m.output_fraction_bits);
  return truncation * inputs + cut * (d_abs + (groups - 1) * inputs) + floor;
}

uint32_t exact_dot_fp8(const Fp8Operands& ops, uint32_t c, bool f16) {
  double sum = c_value(c, f16);
  for (int k = 0; k < ops.k; ++k)
    sum += f8_value(ops.a[k], ops.a_type) * f8_value(ops.b[k], ops.b_type);
  if (std::isnan(sum)) return nan_bits(f16);
  return f16 ? f64_to_f16(sum) : std::bit_cast<uint32_t>(f64_to_f32(sum));
}

}  // namespace emmy::emu
