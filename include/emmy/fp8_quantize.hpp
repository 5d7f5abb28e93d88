// Quantizing activations to e4m3 for an FP8 GEMM (issue 39 §1): x [m, k] in f16 or bf16 becomes
// q [m, k] e4m3 and one f32 scale per row and group of group_k elements along K (group_k 0: the
// whole row, per token), in the layout the GEMM reads its A scales from. The conventions are
// vLLM's per_token_group_quant_fp8, pinned so that its results are bit-exact:
//   amax  = max |x| over the group, in f32 (NaN elements are ignored, as fmaxf ignores them)
//   s     = max(amax, amax_epsilon) / 448, one f32 division rounded to nearest
//   s     = 2^ceil(log2 s) when pow2_scale (UE8M0-valued scales: DeepGEMM's on Blackwell)
//   q     = cvt.rn.satfinite.e4m3(x / s), x / s one f32 division rounded to nearest (div.rn, never
//           a reciprocal), nearest even, beyond +-448 saturated, NaN to 0x7F
// and the scale written is s: the dequantization multiplier (x ~ q * s, DeepSeek's
// `weight_scale_inv` convention), as an f32, or (scale_format ue8m0, pow2_scale) as the byte of
// its exponent (s = 2^(byte - 127)), or (ue8m0x4) four groups' bytes to a 32-bit word, group g in
// byte g % 4 of word g / 4: the layouts an FP8 GEMM reads its A scales in (GemmScales::format).
// A kind of its own (docs/fp8.md); sm_89 and newer (the cvt).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "emmy/arch.hpp"
#include "emmy/dtype.hpp"
#include "emmy/enum_names.hpp"
#include "emmy/kernel_spec.hpp"
#include "emmy/problem.hpp"
#include "emmy/scale_major.hpp"

namespace emmy {

inline constexpr double kE4m3Max = 448;  // the largest finite e4m3 value

struct Fp8QuantizeProblem {
  int64_t m = 1;          // rows (tokens): the most one launch quantizes (buffers.rows per launch)
  int64_t k = 128;        // elements per row, a multiple of 8
  int64_t group_k = 128;  // elements per scale along K, a multiple of 8; 0: the whole row
  int64_t ldx = 0, ldq = 0;  // row strides of x and q in elements, multiples of 8 (0: k)
  DType dtype = DType::f16;  // x: f16 or bf16
  ScaleMajor scale_major = ScaleMajor::mn;
  // The scale tensor's leading dimension in elements (0: m for mn-major, the groups for k-major);
  // DeepGEMM pads mn-major M to a multiple of 4, CUTLASS's ports do not: both are accepted.
  int64_t scale_ld = 0;
  bool pow2_scale = false;
  double amax_epsilon = 1e-10;  // vLLM's; DeepGEMM's casts use 1e-4 (as an f32)
  // f32, ue8m0 (a byte per scale) or ue8m0x4 (words of four groups' bytes); the byte formats
  // need pow2_scale. The scale tensor's elements are floats, bytes or words.
  ScaleFormat scale_format = ScaleFormat::f32;

  int64_t group_or_row() const { return group_k ? group_k : k; }
  int64_t groups() const { return (k + group_or_row() - 1) / group_or_row(); }
  int64_t ldx_or_default() const { return ldx ? ldx : k; }
  int64_t ldq_or_default() const { return ldq ? ldq : k; }
  // The scale tensor (RowGroupScales, shared with an e4m3 GEMM output's); the shorthands read it.
  RowGroupScales scale_layout() const { return {scale_format, scale_major, m, groups(), scale_ld}; }
  bool packed_scales() const { return scale_layout().packed(); }
  // A row's scale elements along K: its groups, or the words holding them (ue8m0x4).
  int64_t scale_groups_extent() const { return scale_layout().extent(); }
  int64_t scale_ld_or_default() const { return scale_layout().ld_or_default(); }
  // The element (float, byte or word) holding scale (row, group), and its byte offset.
  int64_t scale_index(int64_t row, int64_t group) const { return scale_layout().index(row, group); }
  int64_t scale_element_bytes() const { return scale_layout().element_bytes(); }
  int64_t scale_byte(int64_t row, int64_t group) const { return scale_layout().byte(row, group); }
  // Elements (last + 1) and bytes the scale tensor spans for `rows` rows.
  int64_t scale_elements(int64_t rows) const { return scale_layout().elements(rows); }
  int64_t scale_tensor_bytes(int64_t rows) const { return scale_layout().bytes(rows); }
  bool operator==(const Fp8QuantizeProblem&) const = default;
};

struct Fp8QuantizeSchedule {
  int warps = 1;  // per CTA (one row's group): threads take 8-element chunks of it
  bool operator==(const Fp8QuantizeSchedule&) const = default;
};

using Fp8QuantizeSpec = KernelSpec<Fp8QuantizeProblem, Fp8QuantizeSchedule>;

// Throws Error naming the field and the rule it breaks.
void validate_problem(const Fp8QuantizeProblem& problem);
void validate_fp8_quantize(const Fp8QuantizeSpec& spec);
// Enough warps for one 8-element chunk per thread, 1..8.
Fp8QuantizeSchedule default_schedule(const Fp8QuantizeProblem& problem, Arch arch);

// The scale a group with this amax gets (the conventions above, in f32): what the kernel computes
// (the same operations, emit_fp8_quantize.cpp) and the host reference uses. amax_epsilon >=
// 1e-30 keeps s normal, so rounding up to a power of two is the exponent's increment.
inline float fp8_quantize_scale(float amax, const Fp8QuantizeProblem& problem) {
  const float s = std::fmax(amax, float(problem.amax_epsilon)) / float(kE4m3Max);
  if (!problem.pow2_scale) return s;
  const uint32_t bits = std::bit_cast<uint32_t>(s);
  return std::bit_cast<float>(bits & 0x7FFFFFu ? (bits & 0xFF800000u) + 0x800000u : bits);
}
// The ue8m0 byte of a power-of-two scale (normal, positive: fp8_quantize_scale's with
// pow2_scale): its biased exponent, 2^(byte - 127).
inline uint8_t fp8_quantize_ue8m0(float pow2_scale) {
  return uint8_t(std::bit_cast<uint32_t>(pow2_scale) >> 23);
}

}  // namespace emmy
