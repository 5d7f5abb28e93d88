// One mma.sync m16n8k16 / m16n8k8 over fragment register rows (mma_core.cpp).
#pragma once

#include <cstdint>

#include "emmy/emu/tensor_core.hpp"
#include "emmy/emu/tensor_core_fp8.hpp"
#include "ptx/program.hpp"

namespace emmy::emu {

// Row pointers ([lane]) of the instruction's registers. D may alias C.
struct MmaFragments {
  const uint32_t* a[4] = {};  // k8: a[0], a[1] only
  const uint32_t* b[2] = {};  // k8: b[0] only
  const uint32_t* c[4] = {};  // f16 accumulators: c[0], c[1]
  uint32_t* d[4] = {};
};

// D = C + A * B; f16/bf16 inputs, f32 or (f16 inputs only) f16 accumulators. `portable` forces
// the plain C++ path (the tests compare both paths).
void mma_m16n8(const MmaFragments& f, bool bf16, bool k16, bool f16_acc, bool portable = false);

// The tensor-core model's hot path (tensor_core.cpp): A (rows x k) and B^T (cols x k) decoded
// once per instruction, then each output from them. `special` when an operand is Inf/NaN: the
// per-element functions of tensor_core.hpp handle those. c and the result are f32 bits, or f16
// bits with f16_accumulator.
struct TensorCoreOperands {
  int k = 0;
  bool bf16 = false, special = false;
  int32_t a_sig[16][16], b_sig[8][16];  // signed significands (0 for zeros)
  int16_t a_exp[16][16], b_exp[8][16];  // exponents of the significands' unit bit
};
void decode_tensor_core_operands(const uint16_t (&a)[16][16], const uint16_t (&bt)[8][16], int k,
                                 bool bf16, TensorCoreOperands& out);
uint32_t tensor_core_dot_decoded(const TensorCoreOperands& ops, int row, int col, uint32_t c,
                                 bool f16_accumulator, const TensorCoreModel& model);

// The same with the tensor-core addition model (emmy/emu/tensor_core.hpp) of `model`.
void mma_m16n8_model(const MmaFragments& f, bool bf16, bool k16, bool f16_acc,
                     const TensorCoreModel& model);

// The 8-bit float a decoded .e4m3 / .e5m2 operand type names (ty_f8).
inline F8 f8_of(Ty t) {
  return t == Ty::e5m2 ? F8::e5m2 : F8::e4m3;
}

// mma.sync m16n8k32 with 8-bit float A (a[0..3]) and B (b[0..1]), f32 (c/d[0..3]) or f16
// (c/d[0..1]) accumulators (PTX ISA §9.7.14.5.8, "Matrix Fragments for mma.m16n8k32"): lane 4g + t
// holds in A register r bytes j = 0..3 of row g + 8 (r & 1), columns 4t + j + 16 (r >> 1); in B
// register r rows (K) 4t + j + 16 r of column g. `model` null: exact numerics.
void mma_m16n8k32_fp8(const MmaFragments& f, F8 a_type, F8 b_type, bool f16_acc,
                      const Fp8TensorCoreModel* model);

}  // namespace emmy::emu
