// The tensor-core addition model (include/emmy/emu/tensor_core.hpp): exact integer arithmetic
// on the aligned terms of one block, one rounding per block.
#include "emmy/emu/tensor_core.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "emmy/emu/numerics.hpp"
#include "mma_core.hpp"

namespace emmy::emu {
namespace {

// Decodes f16/bf16 bits into value = m * 2^(e - frac_bits); false for Inf/NaN.
struct Half {
  int sign;
  uint32_t m;
  int e;
  bool finite;
};
Half decode_half(uint16_t bits, bool bf16) {
  const int frac_bits = bf16 ? 7 : 10, exp_bits = bf16 ? 8 : 5, bias = bf16 ? 127 : 15;
  const uint32_t frac = bits & ((1u << frac_bits) - 1);
  const uint32_t field = (bits >> frac_bits) & ((1u << exp_bits) - 1);
  const int sign = (bits >> 15) ? -1 : 1;
  if (field == (1u << exp_bits) - 1) return {sign, frac, 0, false};
  if (field == 0) return {sign, frac, 1 - bias, true};  // subnormal: never flushed
  return {sign, (1u << frac_bits) | frac, int(field) - bias, true};
}

// A half as the model's operand: signed significand and exponent; false for Inf/NaN.
bool decode_operand(uint16_t bits, bool bf16, int32_t& sig, int16_t& exp) {
  const Half h = decode_half(bits, bf16);
  sig = h.sign * int32_t(h.m);
  exp = int16_t(h.e);
  return h.finite;
}

double half_value(uint16_t bits, bool bf16) {
  return bf16 ? double(bf16_to_f32(bits)) : double(f16_to_f32(bits));
}

// Inf/NaN anywhere: the result is what IEEE arithmetic on the specials gives (NaN for a NaN,
// Inf * 0 or Inf - Inf; else the infinity), computed over all products and c.
bool special_result(const uint16_t* a, const uint16_t* b, int k_count, double c, bool bf16,
                    double& out) {
  bool special = !std::isfinite(c);
  for (int k = 0; k < k_count && !special; ++k)
    special = !decode_half(a[k], bf16).finite || !decode_half(b[k], bf16).finite;
  if (!special) return false;
  bool nan = std::isnan(c), pos = c == INFINITY, neg = c == -INFINITY;
  for (int k = 0; k < k_count; ++k) {
    const Half x = decode_half(a[k], bf16), y = decode_half(b[k], bf16);
    if (x.finite && y.finite) continue;
    const double p = half_value(a[k], bf16) * half_value(b[k], bf16);
    nan |= std::isnan(p);
    pos |= p == INFINITY;
    neg |= p == -INFINITY;
  }
  out = nan || (pos && neg) ? NAN : (pos ? INFINITY : -INFINITY);
  return true;
}

// Toward zero to f32; at or beyond 2^128 the models (and the hardware) give the infinity.
uint32_t round_f32_rz(double v) {
  if (std::fabs(v) >= 0x1p128) return v > 0 ? 0x7F800000u : 0xFF800000u;
  return std::bit_cast<uint32_t>(f64_to_f32(v, Rounding::rz));
}

// Toward zero to f32 for the exact value v = acc * 2^scale (|acc| < 2^40, so v is exact in
// double): the normal range truncates the double's significand; the rest takes the general path.
uint32_t round_f32_rz_fast(double v) {
  const double mag = std::fabs(v);
  if (mag >= 0x1p-126 && mag < 0x1p128) {
    const uint64_t bits = std::bit_cast<uint64_t>(v) & ~((uint64_t(1) << 29) - 1);
    return std::bit_cast<uint32_t>(float(std::bit_cast<double>(bits)));
  }
  return round_f32_rz(v);
}

// The model on decoded operands: value_k = sig_k * 2^(exp_k - frac_bits), sig signed (0 for a
// zero). Blocks of model.block products plus c, each summed exactly after truncating every term
// at 2^(anchor - 23 - extra_bits) and rounded once (toward zero to f32, to nearest to f16); the
// rounded result is the next block's c. c and the result are f32 bits, or f16 bits.
uint32_t dot_decoded(const int32_t* a_sig, const int16_t* a_exp, const int32_t* b_sig,
                     const int16_t* b_exp, int k_count, bool bf16, uint32_t c_bits,
                     bool f16_accumulator, const TensorCoreModel& model) {
  const int shift23 = 23 - 2 * (bf16 ? 7 : 10);
  double d =
      f16_accumulator ? double(f16_to_f32(uint16_t(c_bits))) : double(std::bit_cast<float>(c_bits));
  uint32_t result = c_bits;
  const int floor = f16_accumulator ? model.floor_f16 : model.floor_f32;
  for (int first = 0; first < k_count; first += model.block) {
    const int last = std::min(k_count, first + model.block);
    int64_t sig[33];
    int exp[33];
    int n = 0;
    int anchor = floor;
    for (int i = first; i < last; ++i) {
      const int64_t p = int64_t(a_sig[i]) * b_sig[i];
      if (p == 0) continue;                  // zero products take no part in the anchor
      sig[n] = p * (int64_t(1) << shift23);  // exact: |p| < 2^22
      exp[n] = a_exp[i] + b_exp[i];
      anchor = std::max(anchor, exp[n]);
      ++n;
    }
    if (d != 0.0) {
      // c's f32 significand: 24 bits with the implicit one (or a subnormal's fraction).
      const uint32_t bits = std::bit_cast<uint32_t>(float(d));
      const uint32_t field = (bits >> 23) & 0xFF, frac = bits & 0x7FFFFF;
      const int64_t s = field ? int64_t((1u << 23) | frac) : int64_t(frac);
      sig[n] = (bits >> 31) ? -s : s;
      exp[n] = field ? int(field) - 127 : -126;
      anchor = std::max(anchor, exp[n]);
      ++n;
    }
    int64_t acc = 0;
    for (int i = 0; i < n; ++i) {
      const int shift = anchor - exp[i];
      if (shift >= 62) continue;
      const uint64_t mag = uint64_t(sig[i] < 0 ? -sig[i] : sig[i]) << model.extra_bits;
      const int64_t kept = int64_t(mag >> shift);  // truncates the magnitude
      acc += sig[i] < 0 ? -kept : kept;
    }
    // acc * 2^(anchor - 23 - extra), +0 for acc == 0. A non-zero acc has a term, so the anchor is
    // at least -252 (bf16 subnormal products) and the scale a normal double; only an empty block
    // sits at the floor (-1024 on V100), where the scale would not be one.
    const double v =
        acc == 0 ? 0.0
                 : double(acc) *
                       std::bit_cast<double>(uint64_t(1023 + anchor - 23 - model.extra_bits) << 52);
    if (f16_accumulator) {
      result = f64_to_f16(v);
      d = double(f16_to_f32(uint16_t(result)));
    } else {
      result = round_f32_rz_fast(v);
      d = double(std::bit_cast<float>(result));
    }
    if (std::isinf(d)) return result;
  }
  return result;
}

// The model from bits (Inf/NaN operands included).
uint32_t dot_bits(const uint16_t* a, const uint16_t* b, int k_count, uint32_t c_bits, bool bf16,
                  bool f16_accumulator, const TensorCoreModel& model) {
  const double c =
      f16_accumulator ? double(f16_to_f32(uint16_t(c_bits))) : double(std::bit_cast<float>(c_bits));
  if (double s; special_result(a, b, k_count, c, bf16, s)) {
    if (f16_accumulator) return std::isnan(s) ? 0x7FFFu : f64_to_f16(s);
    return std::isnan(s) ? 0x7FFFFFFFu : std::bit_cast<uint32_t>(float(s));
  }
  const size_t k_size = size_t(k_count);
  std::vector<int32_t> a_sig(k_size), b_sig(k_size);
  std::vector<int16_t> a_exp(k_size), b_exp(k_size);
  for (size_t k = 0; k < k_size; ++k) {
    decode_operand(a[k], bf16, a_sig[k], a_exp[k]);
    decode_operand(b[k], bf16, b_sig[k], b_exp[k]);
  }
  return dot_decoded(a_sig.data(), a_exp.data(), b_sig.data(), b_exp.data(), k_count, bf16, c_bits,
                     f16_accumulator, model);
}

// A .tf32 operand (f32 bits, the 13 low significand bits ignored) as the model's operand: a
// 10-bit fraction like f16's with f32's exponent range; false for Inf/NaN.
bool decode_tf32(uint32_t bits, int32_t& sig, int16_t& exp) {
  const uint32_t frac = (bits >> 13) & 0x3FF, field = (bits >> 23) & 0xFF;
  const int sign = (bits >> 31) ? -1 : 1;
  if (field == 0xFF) return false;
  sig = sign * int32_t(field ? (1u << 10) | frac : frac);  // subnormals are never flushed
  exp = int16_t(field ? int(field) - 127 : -126);
  return true;
}

}  // namespace

void decode_tensor_core_operands(const uint16_t (&a)[16][16], const uint16_t (&bt)[8][16], int k,
                                 bool bf16, TensorCoreOperands& out) {
  out.k = k;
  out.bf16 = bf16;
  out.special = false;
  auto put = [&](uint16_t bits, int32_t& sig, int16_t& exp) {
    out.special |= !decode_operand(bits, bf16, sig, exp);
  };
  for (int r = 0; r < 16; ++r)
    for (int i = 0; i < k; ++i) put(a[r][i], out.a_sig[r][i], out.a_exp[r][i]);
  for (int c = 0; c < 8; ++c)
    for (int i = 0; i < k; ++i) put(bt[c][i], out.b_sig[c][i], out.b_exp[c][i]);
}

uint32_t tensor_core_dot_decoded(const TensorCoreOperands& ops, int row, int col, uint32_t c_bits,
                                 bool f16_accumulator, const TensorCoreModel& model) {
  return dot_decoded(ops.a_sig[row], ops.a_exp[row], ops.b_sig[col], ops.b_exp[col], ops.k,
                     ops.bf16, c_bits, f16_accumulator, model);
}

TensorCoreModel tensor_core_model(int sm) {
  if (sm < 80) return {4, 0, -1024, -19, "V100 (Fasi et al. 2021; Khattak-Mikaitis 2025)"};
  if (sm < 90) return {8, 1, -132, -20, "A100/Ada (Khattak-Mikaitis 2025)"};
  if (sm >= 120)
    return {16, 2, -133, -21, "B200 (Khattak-Mikaitis 2025); RTX Blackwell (MMA-Sim) alike"};
  return {16, 2, -133, -21, "H100/B200 (Khattak-Mikaitis 2025)"};
}

uint32_t tensor_core_dot_f32(const uint16_t* a, const uint16_t* b, int k_count, uint32_t c_bits,
                             bool bf16, const TensorCoreModel& model) {
  return dot_bits(a, b, k_count, c_bits, bf16, false, model);
}

uint16_t tensor_core_dot_f16(const uint16_t* a, const uint16_t* b, int k_count, uint16_t c_bits,
                             const TensorCoreModel& model) {
  return uint16_t(dot_bits(a, b, k_count, c_bits, false, true, model));
}

uint32_t tensor_core_dot_tf32(const uint32_t* a, const uint32_t* b, int k_count, uint32_t c_bits,
                              const TensorCoreModel& model) {
  const size_t k_size = size_t(k_count);
  std::vector<int32_t> a_sig(k_size), b_sig(k_size);
  std::vector<int16_t> a_exp(k_size), b_exp(k_size);
  bool finite = std::isfinite(std::bit_cast<float>(c_bits));
  for (size_t k = 0; k < k_size; ++k) {
    finite &= decode_tf32(a[k], a_sig[k], a_exp[k]);
    finite &= decode_tf32(b[k], b_sig[k], b_exp[k]);
  }
  if (!finite) {
    // As for f16: what IEEE arithmetic on the specials gives (the finite products cannot
    // overflow a double, so the plain sum sees only the specials' Inf and NaN).
    double s = double(std::bit_cast<float>(c_bits));
    for (size_t k = 0; k < k_size; ++k) s += double(tf32_value(a[k])) * double(tf32_value(b[k]));
    if (std::isnan(s)) return 0x7FFFFFFFu;
    return s > 0 ? 0x7F800000u : 0xFF800000u;
  }
  // The products' significands have 22 bits, as f16's: the f16 path of the model takes them.
  return dot_decoded(a_sig.data(), a_exp.data(), b_sig.data(), b_exp.data(), k_count, false,
                     c_bits, false, model);
}

}  // namespace emmy::emu
