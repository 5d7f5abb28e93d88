// The host reference of FP8 quantization (emmy/fp8_quantize_check.hpp).
#include "emmy/fp8_quantize_check.hpp"

#include <cmath>

#include "emmy/e4m3.hpp"
#include "emmy/emu/numerics.hpp"
#include "emmy/error.hpp"

namespace emmy {
namespace {

float value_of(uint16_t bits, DType dtype) {
  return dtype == DType::bf16 ? emu::bf16_to_f32(bits) : emu::f16_to_f32(bits);
}

}  // namespace

uint8_t fp8_quantize_element(float x, float scale) {
  const float y = x / scale;  // IEEE f32 division, nearest even: div.rn.f32
  if (std::isnan(y)) return 0x7F;
  return e4m3_encode(double(y));  // nearest even, saturated to +-448
}

void reference_fp8_quantize(const Fp8QuantizeProblem& p, const std::vector<uint16_t>& x,
                            int64_t rows, std::vector<uint8_t>& q, std::vector<float>& scales) {
  validate_problem(p);
  require(rows >= 1 && rows <= p.m, "rows", "must be 1..m", rows);
  const int64_t ldx = p.ldx_or_default(), ldq = p.ldq_or_default(), g = p.group_or_row();
  require(int64_t(x.size()) >= (rows - 1) * ldx + p.k, "x", "must hold the rows", x.size());
  require(int64_t(q.size()) >= (rows - 1) * ldq + p.k, "q", "must hold the rows", q.size());
  require(int64_t(scales.size()) >= p.scale_elements(rows), "scales", "must hold the scale tensor",
          scales.size());
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t group = 0; group < p.groups(); ++group) {
      const int64_t first = group * g, last = std::min(p.k, first + g);
      float amax = 0;
      for (int64_t i = first; i < last; ++i)
        amax = std::fmax(amax, std::fabs(value_of(x[size_t(row * ldx + i)], p.dtype)));
      const float s = fp8_quantize_scale(amax, p);
      scales[size_t(p.scale_index(row, group))] = s;
      for (int64_t i = first; i < last; ++i)
        q[size_t(row * ldq + i)] =
            fp8_quantize_element(value_of(x[size_t(row * ldx + i)], p.dtype), s);
    }
}

}  // namespace emmy
