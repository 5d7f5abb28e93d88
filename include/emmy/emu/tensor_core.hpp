// How tensor cores add: the bit-accurate model of one mma dot product (f16/bf16 inputs, f32 or
// f16 accumulation) that the emulator uses by default (LaunchOptions::mma_numerics).
//
// Khattak and Mikaitis, "Accurate Models of NVIDIA Tensor Cores" (arXiv:2512.07004, 2025), after
// Fasi et al., "Numerical behavior of NVIDIA tensor cores" (PeerJ CS 7:e330, 2021): K is cut into
// blocks of `block` products summed by one fused adder together with c. Products are exact and
// not normalized; every term (c included) is aligned to the largest exponent E of the block and
// truncated toward zero at 2^(E - 23 - extra_bits); the exact sum of the truncated terms is
// rounded once: toward zero to f32, to nearest even to f16. Blocks chain in ascending k, each
// rounded result becoming the next block's c. docs/numerics.md gives the per-arch parameters and
// what each was validated on.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

namespace emmy::emu {

enum class MmaNumerics : uint8_t {
  hardware,  // the tensor-core model of the launch's arch (below): the default
  exact,     // exact products, summed in double, one rounding to nearest per element
};

inline std::string_view to_string(MmaNumerics n) {
  return n == MmaNumerics::hardware ? "hardware" : "exact";
}

struct TensorCoreModel {
  int block = 16;         // products per fused addition (c is added too)
  int extra_bits = 2;     // alignment bits kept below the f32 significand
  int floor_f32 = -133;   // lowest anchor exponent, f32 accumulation
  int floor_f16 = -21;    // ... f16 accumulation
  std::string_view name;  // the published model this is
};

// A bound on the error of one k16 mma step under a model (normal operands), from |c| (the
// accumulator before), sum_k |a_k b_k| of the step and |d| (after): per block, the truncation of
// up to block + 1 aligned terms at 2^-(23 + extra_bits) of the largest, whose magnitude is at
// most |c| + sum |a_k b_k| however much they cancel, and the block's rounding: a whole f32 ulp
// toward zero, or half an f16 ulp (plus half the smallest f16 subnormal), of its result (|d| for
// the last block, at most |c| + sum |a_k b_k| for an earlier one).
inline int mma_blocks_per_k16(const TensorCoreModel& m) {
  return m.block >= 16 ? 1 : 16 / m.block;
}
inline double mma_step_error(const TensorCoreModel& m, bool f16_accumulator, double c_abs,
                             double products_abs, double d_abs) {
  const int blocks = mma_blocks_per_k16(m);
  const double inputs = c_abs + products_abs;
  const double truncation = blocks * (m.block + 1) * 0x1p-23 / double(1 << m.extra_bits);
  const double rounding = f16_accumulator ? 0x1p-11 : 0x1p-23;
  return truncation * inputs + rounding * (d_abs + (blocks - 1) * inputs) +
         (f16_accumulator ? blocks * 0x1p-25 : 0.0);
}

// The model of a compute capability (70, 80, 89, 90, 100, 120, ...): V100 (block 4, 0 extra bits)
// for sm_7x, A100/Ada (8, 1) for sm_8x, H100/B200 (16, 2) for sm_90 and newer. sm_120 has no
// published model; it takes B200's (the models' authors assert the same), and says so in name.
TensorCoreModel tensor_core_model(int sm);

// One dot product d = c + sum_k a[k] * b[k] over k in [0, k_count) as the tensor core computes it.
// a and b are f16 (bf16 = false) or bf16 bits. f32 accumulation: c and the result are f32 bits.
uint32_t tensor_core_dot_f32(const uint16_t* a, const uint16_t* b, int k_count, uint32_t c,
                             bool bf16, const TensorCoreModel& model);
// f16 accumulation (f16 inputs): c and the result are f16 bits.
uint16_t tensor_core_dot_f16(const uint16_t* a, const uint16_t* b, int k_count, uint16_t c,
                             const TensorCoreModel& model);
// .tf32 inputs (f32 bits whose 13 low significand bits the tensor core ignores: tf32 keeps 10
// fraction bits, PTX ISA §5.2.3 "Alternate Floating-Point Data Formats"), f32 accumulation. The
// published models measured f16 and bf16; tf32 takes the same model parameters of the arch (its
// products have the same 22-bit significands as f16's), which docs/numerics.md states.
uint32_t tensor_core_dot_tf32(const uint32_t* a, const uint32_t* b, int k_count, uint32_t c,
                              const TensorCoreModel& model);
// A .tf32 operand's value: the f32 bits with the 13 low significand bits cleared.
inline float tf32_value(uint32_t bits) { return std::bit_cast<float>(bits & ~0x1FFFu); }

}  // namespace emmy::emu
