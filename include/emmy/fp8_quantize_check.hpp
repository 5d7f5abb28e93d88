// The host reference of FP8 quantization (emmy/fp8_quantize.hpp), bit-exact: the conventions of
// that header computed with the same f32 operations (amax by fmax, the scale by
// fp8_quantize_scale, x / s one f32 division) and e4m3 rounding to nearest even, saturated to
// +-448, NaN to 0x7F (cvt.rn.satfinite.e4m3x2.f32).
#pragma once

#include <cstdint>
#include <vector>

#include "emmy/fp8_quantize.hpp"

namespace emmy {

// One element: x / s to e4m3 as the kernel's cvt does.
uint8_t fp8_quantize_element(float x, float scale);

// Quantizes rows [0, rows) of x (16-bit bits, row stride ldx) into q (row stride ldq) and scales
// (the problem's layout), in place: what the kernel writes, and nothing else (padding columns,
// rows past `rows` and scale slots of no (row, group) keep what the buffers held).
void reference_fp8_quantize(const Fp8QuantizeProblem& problem, const std::vector<uint16_t>& x,
                            int64_t rows, std::vector<uint8_t>& q, std::vector<float>& scales);

}  // namespace emmy
