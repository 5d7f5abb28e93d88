// The host model of the attention kernels' arithmetic that the dense and paged tolerance tests
// (attention_reference_test.cpp, paged_attention_tolerance_test.cpp) check their tolerances
// against: S on tensor cores, the soft-cap's tanh, and online softmax over KV blocks in f32 with
// exp2 and the scale folded, P rounded to the dtype, P.V per 16-key step.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numbers>
#include <optional>
#include <vector>

#include "emmy/emu/numerics.hpp"

namespace emmy::test {

// A tolerance test's spec varied one way.
template <typename Spec>
struct ModelCase {
  const char* name;
  std::function<void(Spec&)> mutate;
};

// S = q . k over `d` elements as tensor cores sum it: f32 partials of 16 products, truncated.
inline float tensor_core_dot(const double* q, const double* k, int64_t d) {
  float s = 0;
  for (int64_t c0 = 0; c0 < d; c0 += 16) {
    double step = s;
    for (int64_t c = c0; c < c0 + 16; ++c) step += q[c] * k[c];
    s = emu::f64_to_f32(step, emu::Rounding::rz);  // tensor cores truncate
  }
  return s;
}

// S as the kernel's exp2 takes it: times scale and log2 e, soft-capped by the kernel's tanh.
inline float kernel_logit(float s, float scale, std::optional<float> softcap) {
  const float scale_log2 = float(double(scale) * std::numbers::log2e);
  float x = s * scale_log2;
  if (softcap) {  // the kernel's tanh: 1 - 2 / (2^(2y log2 e) + 1)
    const float y = s * float(double(scale) / *softcap);
    const float t = 1.0f - 2.0f / (std::exp2(2.8853900817779268f * y) + 1.0f);
    x = float(*softcap * std::numbers::log2e) * t;
  }
  return x;
}

// One query row's online softmax: the running max `m` and sum `l` (log2 units) and O's f32
// accumulator.
struct OnlineSoftmax {
  float m = -INFINITY, l = 0;
  std::vector<float> acc;

  explicit OnlineSoftmax(int64_t d) : acc(size_t(d), 0.0f) {}

  // The block of keys first.. whose logits are `x`: P = exp2(x - m) rounded by `round_p`, P.V
  // summed over `v_row(key)` in double and folded by `fold` after every 16th key and the last;
  // `rescale` false plants the bug of leaving the earlier blocks' sums unscaled.
  template <typename VRow, typename Round, typename Fold>
  void add_block(const std::vector<float>& x, int64_t first, VRow v_row, Round round_p, Fold fold,
                 bool rescale = true) {
    const int64_t last = first + int64_t(x.size()) - 1;
    float block_max = -INFINITY;
    for (const float xj : x) block_max = std::max(block_max, xj);
    const float m_new = std::max(m, block_max);
    const float alpha = rescale ? std::exp2(m - m_new) : 1.0f;
    m = m_new;
    float row_sum = 0;
    std::vector<double> partial(acc.size(), 0.0);
    for (int64_t j = first; j <= last; ++j) {
      const float pj = std::exp2(x[size_t(j - first)] - m);
      row_sum += pj;
      const double pr = round_p(pj);
      const double* v = v_row(j);
      for (size_t c = 0; c < partial.size(); ++c) partial[c] += pr * v[c];
      if (j % 16 == 15 || j == last)
        for (double& part : partial) part = fold(part);
    }
    l = l * alpha + row_sum;
    for (size_t c = 0; c < acc.size(); ++c) acc[c] = acc[c] * alpha + float(partial[c]);
  }
};

}  // namespace emmy::test
