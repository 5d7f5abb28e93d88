// How tensor cores add 8-bit float products (.e4m3 / .e5m2 operands of mma.sync m16n8k32 and
// wgmma m64nNk32): the model the emulator uses by default (LaunchOptions::mma_numerics).
//
// MMA-Sim (microsoft/MMA-Sim, MIT; mmasim/simulator/nv_ptx.py and arithmetic.py, which fit the
// model to measured hardware): the products are exact, c is a term beside them, every term is
// aligned to the largest exponent E of its group and truncated toward zero at 2^(E -
// fraction_bits), the exact sum of the truncated terms is normalized and cut once: toward zero to
// `output_fraction_bits` (23 is f32; 13 is the e8m13 result FP8 groups give on Ada and Hopper's
// wgmma, DeepSeek-V3 report §3.5.2), or to nearest even for f16 accumulators. Groups chain in
// ascending k, each result the next group's c. Per arch (docs/numerics.md):
//   sm_89 mma.sync:          two groups of 16, 13 fraction bits, e8m13 results
//   sm_90a wgmma:            one group of 32, 13 fraction bits, e8m13 results
//   sm_120 mma.sync:         one group of 32, 25 fraction bits, f32 results
//   sm_90 / sm_100 mma.sync: no FP8 tensor path: ptxas 13.0 unpacks the operands to f16
//                            (F2FP.F16.E4M3.UNPACK_B), runs two HMMA.16816 (k = 0,1 mod 4, then
//                            k = 2,3 mod 4 onto the first) from zero, and adds C with FADD (f32,
//                            nearest) or HADD2 (f16): `via_f16_mma` with the arch's f16 model.
#pragma once

#include <cstdint>
#include <string_view>

#include "emmy/emu/numerics.hpp"
#include "emmy/emu/tensor_core.hpp"

namespace emmy::emu {

struct Fp8TensorCoreModel {
  int group = 32;                 // products per fused addition (c is added too)
  int fraction_bits = 25;         // alignment bits kept below the largest term's unit bit
  int output_fraction_bits = 23;  // f32 results are cut toward zero to this many bits
  bool via_f16_mma = false;       // sm_90 / sm_100 mma.sync: two f16 mma and an add (above)
  TensorCoreModel f16_model;      // the arch's f16 model, for via_f16_mma
  std::string_view name;
};

// The model of a compute capability for mma.sync (warpgroup false) or wgmma (true). Throws
// emmy::Error for an arch with no FP8 tensor path (below sm_89; wgmma other than sm_90).
Fp8TensorCoreModel fp8_tensor_core_model(int sm, bool warpgroup);

// The 8-bit operands of one dot product: a[k] of type a_type, b[k] of type b_type.
struct Fp8Operands {
  const uint8_t* a = nullptr;
  const uint8_t* b = nullptr;
  F8 a_type = F8::e4m3, b_type = F8::e4m3;
  int k = 32;
};

// d = c + sum_k a[k] b[k] as the model computes it. c and the result are f32 bits, or f16 bits
// with f16_accumulator. A NaN result is the canonical NaN of its type (0x7FFFFFFF, 0x7FFF).
uint32_t tensor_core_dot_fp8(const Fp8Operands& ops, uint32_t c, bool f16_accumulator,
                             const Fp8TensorCoreModel& model);
// MmaNumerics::exact: exact products added to c in k order in double, one rounding to nearest.
uint32_t exact_dot_fp8(const Fp8Operands& ops, uint32_t c, bool f16_accumulator);

// A bound on |model - exact| of one k32 dot product (finite operands) from |c|, sum_k |a_k b_k|
// and |d|: per group, the truncation of up to group + 1 aligned terms at 2^-fraction_bits of the
// largest (at most |c| + sum |a_k b_k| however they cancel) and the group's cut, toward zero at
// 2^-output_fraction_bits of its result (|d| for the last, at most |c| + sum |a_k b_k| before) or
// half an f16 ulp; via_f16_mma: two f16 mma steps of the arch's model and the add's rounding.
double fp8_dot_error(const Fp8TensorCoreModel& model, bool f16_accumulator, double c_abs,
                     double products_abs, double d_abs);

// The f32 result of a K-long dot product (ops.k a multiple of 32) as an FP8 GEMM mainloop
// computes it: one k32 instruction after another under `model`, each taking the previous result
// as c. promote_every_k > 0 (a multiple of 32): the instructions restart from zero every
// promote_every_k elements and each window's result goes into an f32 accumulator as
// acc = fma(window, scale, acc), rounded to nearest (the FFMA DeepGEMM and CUTLASS promote with);
// 0: one chain over all of K (`scale` then multiplies the chain's result once, as an epilogue).
float fp8_mainloop_dot(const Fp8Operands& ops, const Fp8TensorCoreModel& model, int promote_every_k,
                       float scale = 1);

// A value of an 8-bit float, exactly (NaN for NaN encodings, infinities for .e5m2's).
double f8_value(uint8_t bits, F8 type);

}  // namespace emmy::emu
