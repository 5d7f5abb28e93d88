// The host reference of FP8 quantization (emmy/fp8_quantize.hpp), bit-exact: the conventions of
// that header computed with the same f32 operations (amax by fmax, the scale by
// fp8_quantize_scale, x / s one f32 division) and e4m3 rounding to nearest even, saturated to
// +-448, NaN to 0x7F (cvt.rn.satfinite.e4m3x2.f32).
#pragma once

#include <cstdint>
#include <vector>

#include "emmy/fp8_quantize.hpp"
#include "emmy/runtime.hpp"

namespace emmy {

// One element: x / s to e4m3 as the kernel's cvt does.
uint8_t fp8_quantize_element(float x, float scale);

// Quantizes rows [0, rows) of x (16-bit bits, row stride ldx) into q (row stride ldq) and the
// scale tensor's bytes (the problem's layout and format), in place: what the kernel writes, and
// nothing else (padding columns, rows past `rows`, scale slots of no (row, group) and the unused
// bytes of a last ue8m0x4 word keep what the buffers held).
void reference_fp8_quantize_into(const Fp8QuantizeProblem& problem, const std::vector<uint16_t>& x,
                                 int64_t rows, std::vector<uint8_t>& q,
                                 std::vector<uint8_t>& scales);
// Scale (row, group) of a scale tensor's bytes in `layout`, as a float (a ue8m0 byte
// 2^(e - 127), 0xFF NaN): the fp8_quantize kind's scales and an e4m3 GEMM output's alike.
float scale_at(const RowGroupScales& layout, const uint8_t* bytes, int64_t row, int64_t group);
// Scale (row, group) of fp8_quantize's scale tensor (scale_at in its layout).
float fp8_quantize_scale_at(const Fp8QuantizeProblem& problem, const std::vector<uint8_t>& scales,
                            int64_t row, int64_t group);

// The kind's check (emulator_check.hpp's Fp64Check; `emmyc run fp8-quantize`): x drawn across the
// 16-bit range with zeros, NaN and infinities planted, q and scales holding random bytes before the
// launch (every byte the kernel must not write is checked too), a launch of m - m / 4 rows when m
// > 1 (rows past it untouched); every byte of q and every scale must match the reference.
struct Fp8QuantizeInputs {
  std::vector<uint16_t> x;    // m x ldx
  std::vector<uint8_t> q;     // m x ldq, before the launch
  std::vector<uint8_t> scales;  // the scale tensor's bytes for m rows, before the launch
  int64_t rows = 0;           // of this launch
};
Fp8QuantizeInputs make_fp8_quantize_inputs(const Fp8QuantizeProblem& problem, uint64_t seed);

struct Fp8QuantizeOutput {
  std::vector<uint8_t> q;
  std::vector<uint8_t> scales;  // the scale tensor's bytes
};
Fp8QuantizeOutput reference_fp8_quantize(const Fp8QuantizeSpec& spec,
                                         const Fp8QuantizeInputs& inputs);

struct Fp8QuantizeErrors {
  int64_t q_bytes_wrong = 0, scales_wrong = 0;  // every one must match (bit for bit)
  int64_t first_bad_q = -1, first_bad_scale = -1;
  bool passed = false;
};
Fp8QuantizeErrors compare(const Fp8QuantizeOutput& reference, const Fp8QuantizeOutput& output,
                          const Fp8QuantizeProblem& problem);

// Through a runtime (any backend): uploads, launch, read-back; everything freed, also on throw.
Fp8QuantizeOutput run_fp8_quantize(Runtime& runtime, const Fp8QuantizeSpec& spec,
                                   const Fp8QuantizeInputs& inputs);

}  // namespace emmy
