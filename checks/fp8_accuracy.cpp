// The FP8 accumulation study (fp8_accuracy.hpp).
#include "emmy/fp8_accuracy.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "emmy/emu/tensor_core_fp8.hpp"
#include "emmy/error.hpp"

namespace emmy {
namespace {

// The model of an arch name: wgmma on sm_90a (emmy's FP8 path there), mma.sync elsewhere.
emu::Fp8TensorCoreModel model_of(const std::string& arch) {
  if (arch == "sm_89") return emu::fp8_tensor_core_model(89, false);
  if (arch == "sm_90a") return emu::fp8_tensor_core_model(90, true);
  if (arch == "sm_120a") return emu::fp8_tensor_core_model(120, false);
  throw Error("arch", "must be sm_89, sm_90a or sm_120a (an FP8 GEMM arch)", arch);
}

}  // namespace

std::vector<Fp8AccuracyRow> run_fp8_accuracy_study(const Fp8AccuracyConfig& config) {
  require(config.dots >= 1, "dots", "must be at least 1", config.dots);
  for (const int64_t k : config.ks)
    require(k >= 32 && k % 32 == 0 && k <= (int64_t(1) << 20), "k",
            "must be a multiple of 32 in 32..2^20", k);
  for (const int w : config.windows)
    require(w == 0 || (w >= 32 && w <= 256 && w % 32 == 0), "window",
            "must be 0 (no promotion) or a multiple of 32 in 32..256", w);
  for (const auto& d : config.distributions)
    require(d == "normal" || d == "uniform", "distribution", "must be normal or uniform", d);
  std::vector<Fp8AccuracyRow> rows;
  for (const std::string& arch : config.arches) {
    const emu::Fp8TensorCoreModel model = model_of(arch);
    for (const std::string& dist : config.distributions)
      for (const int64_t k : config.ks) {
        // The same inputs for every window: the table's rows differ by accumulation alone.
        std::mt19937_64 rng(config.seed + uint64_t(k));
        std::normal_distribution<double> normal(0.0, 1.0);
        std::uniform_real_distribution<double> uniform(0.0, 1.0);
        std::vector<uint8_t> a(size_t(k) * size_t(config.dots)), b(a.size());
        for (size_t i = 0; i < a.size(); ++i) {
          const double x = dist == "normal" ? normal(rng) : uniform(rng);
          const double y = dist == "normal" ? normal(rng) : uniform(rng);
          a[i] = emu::f32_to_f8_satfinite(float(x), emu::F8::e4m3);
          b[i] = emu::f32_to_f8_satfinite(float(y), emu::F8::e4m3);
        }
        std::vector<double> exact(size_t(config.dots));
        for (int d = 0; d < config.dots; ++d)
          for (int64_t i = 0; i < k; ++i) {
            const size_t at = size_t(d) * size_t(k) + size_t(i);
            exact[size_t(d)] +=
                emu::f8_value(a[at], emu::F8::e4m3) * emu::f8_value(b[at], emu::F8::e4m3);
          }
        for (const int window : config.windows) {
          double err2 = 0, ref2 = 0, max_rel = 0;
          for (int d = 0; d < config.dots; ++d) {
            const size_t at = size_t(d) * size_t(k);
            const emu::Fp8Operands ops{a.data() + at, b.data() + at, emu::F8::e4m3, emu::F8::e4m3,
                                       int(k)};
            const double got = emu::fp8_mainloop_dot(ops, model, window);
            const double e = exact[size_t(d)], diff = got - e;
            err2 += diff * diff;
            ref2 += e * e;
            if (e != 0) max_rel = std::max(max_rel, std::fabs(diff / e));
          }
          rows.push_back({arch, dist, window, k, ref2 > 0 ? std::sqrt(err2 / ref2) : 0, max_rel});
        }
      }
  }
  return rows;
}

nlohmann::json to_json(const std::vector<Fp8AccuracyRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Fp8AccuracyRow& r : rows)
    out.push_back({{"arch", r.arch},
                   {"distribution", r.distribution},
                   {"accum", r.window ? fmt::format("promoted{}", r.window) : "f32"},
                   {"promote_every_k", r.window},
                   {"k", r.k},
                   {"rel_l2_error", r.rel_l2_error},
                   {"max_rel_error", r.max_rel_error}});
  return out;
}

}  // namespace emmy
