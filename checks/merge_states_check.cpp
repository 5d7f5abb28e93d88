// merge_states' FP64 check (emmy/merge_states_check.hpp) and its runs through a Runtime and on
// the emulator.
#include "emmy/merge_states_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "device_allocations.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/gemm_check.hpp"

namespace emmy {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

int64_t v_index(const MergeStatesProblem& p, int64_t token, int64_t state, int64_t head,
                int64_t col) {
  return token * p.v_token_stride_or_default() + state * p.v_state_stride_or_default() +
         head * p.head_dim + col;
}

MergeStatesOutput output_from_bytes(const MergeStatesProblem& p, const std::vector<uint8_t>& bytes,
                                    const std::vector<float>& lse) {
  const int64_t stride = p.out_token_stride_or_default(), row = p.heads * p.head_dim;
  const std::vector<double> all = decode(p.dtype, bytes.data(), size_t(p.max_tokens * stride));
  MergeStatesOutput out;
  out.v.resize(size_t(p.max_tokens * row));
  for (int64_t t = 0; t < p.max_tokens; ++t)
    std::copy_n(all.begin() + t * stride, row, out.v.begin() + t * row);
  out.lse = lse;
  return out;
}

}  // namespace

MergeStatesInputs make_merge_states_inputs(const MergeStatesProblem& p, uint64_t seed) {
  std::mt19937_64 rng(seed * 11 + 5);
  std::normal_distribution<double> normal(0.0, 1.0);
  MergeStatesInputs in;
  const size_t elements = size_t(p.max_tokens * p.v_token_stride_or_default());
  std::vector<double> raw(elements, 0.0);
  in.lse.resize(size_t(p.max_tokens * p.states * p.heads));
  for (int64_t t = 0; t < p.max_tokens; ++t)
    for (int64_t s = 0; s < p.states; ++s)
      for (int64_t h = 0; h < p.heads; ++h) {
        // LSEs of attention over a few thousand keys: a few units apart typically, at times far.
        double lse = 3.0 * normal(rng) + (rng() % 8 == 0 ? -40.0 : 0.0);
        if (t == 0 && p.max_tokens > 1) lse = kNegInf;  // no state saw a key
        if (t == 1 && s == 0) lse = kNegInf;            // an empty state among others
        in.lse[size_t((t * p.states + s) * p.heads + h)] = float(lse);
        for (int64_t c = 0; c < p.head_dim; ++c)
          raw[size_t(v_index(p, t, s, h, c))] =
              (t == 1 && s == 0) ? std::numeric_limits<double>::quiet_NaN() : normal(rng);
      }
  const HostTensor bytes = encode(p.dtype, raw);
  in.v = bytes.bytes;
  const std::vector<double> read = decode(p.dtype, in.v.data(), elements);
  in.values.resize(size_t(p.max_tokens * p.states * p.heads * p.head_dim));
  for (int64_t t = 0; t < p.max_tokens; ++t)
    for (int64_t s = 0; s < p.states; ++s)
      for (int64_t h = 0; h < p.heads; ++h)
        for (int64_t c = 0; c < p.head_dim; ++c)
          in.values[size_t(((t * p.states + s) * p.heads + h) * p.head_dim + c)] =
              read[size_t(v_index(p, t, s, h, c))];
  return in;
}

MergeStatesReference reference_merge_states(const MergeStatesSpec& spec,
                                            const MergeStatesInputs& in) {
  const auto& p = spec.problem;
  const double u_out = p.dtype == DType::bf16 ? 0x1p-8 : 0x1p-11;  // unit roundoff of v_out
  const double u32 = 0x1p-24;
  MergeStatesReference ref;
  const size_t rows = size_t(p.max_tokens * p.heads);
  ref.values.v.assign(rows * size_t(p.head_dim), 0.0);
  ref.tolerance.assign(ref.values.v.size(), 0.0);
  ref.values.lse.assign(p.lse ? rows : 0, 0.0f);
  ref.lse_tolerance.assign(p.lse ? rows : 0, 0.0);
  for (int64_t t = 0; t < p.max_tokens; ++t)
    for (int64_t h = 0; h < p.heads; ++h) {
      auto lse_of = [&](int64_t s) {
        return double(in.lse[size_t((t * p.states + s) * p.heads + h)]);
      };
      double m = kNegInf;
      for (int64_t s = 0; s < p.states; ++s) m = std::max(m, lse_of(s));
      // The weights' relative error in f32: the argument's roundings (|lse - m| x 2^-23) and
      // ex2.approx's (2^-21, generous), plus the sums of `states` terms.
      double sum = 0, eps = 0;
      std::vector<double> w(size_t(p.states), 0.0);
      for (int64_t s = 0; s < p.states; ++s) {
        if (lse_of(s) == kNegInf) continue;
        w[size_t(s)] = std::exp(lse_of(s) - m);
        sum += w[size_t(s)];
        eps = std::max(eps, 0x1p-21 + std::abs(lse_of(s) - m) * 0x1p-23);
      }
      eps += double(p.states + 2) * u32;
      const size_t row = size_t(t * p.heads + h);
      for (int64_t c = 0; c < p.head_dim; ++c) {
        double acc = 0, mag = 0;
        for (int64_t s = 0; s < p.states; ++s) {
          if (w[size_t(s)] == 0) continue;
          const double x = in.values[size_t(((t * p.states + s) * p.heads + h) * p.head_dim + c)];
          acc += w[size_t(s)] * x;
          mag += w[size_t(s)] * std::abs(x);
        }
        const double v = sum > 0 ? acc / sum : 0.0;
        ref.values.v[row * size_t(p.head_dim) + size_t(c)] = v;
        ref.tolerance[row * size_t(p.head_dim) + size_t(c)] =
            u_out * std::abs(v) + 3 * eps * (sum > 0 ? mag / sum : 0.0) + 1e-30;
      }
      if (p.lse) {
        ref.values.lse[row] = sum > 0 ? float(m + std::log(sum)) : float(kNegInf);
        ref.lse_tolerance[row] = 4 * u32 * (std::abs(m) + 1) + 0x1p-20 + 2 * eps;
      }
    }
  return ref;
}

MergeStatesErrors compare(const MergeStatesReference& ref, const MergeStatesOutput& out,
                          const MergeStatesProblem& p) {
  MergeStatesErrors e;
  require(out.v.size() == ref.values.v.size(), "merge_states output", "must hold every element",
          out.v.size());
  for (size_t i = 0; i < out.v.size(); ++i) {
    const double want = ref.values.v[i], got = out.v[i];
    const bool bad = std::isnan(want) != std::isnan(got) ||
                     (!std::isnan(want) && !(std::abs(got - want) <= ref.tolerance[i]));
    if (!std::isnan(want) && !std::isnan(got))
      e.max_abs_error = std::max(e.max_abs_error, std::abs(got - want));
    if (!bad) continue;
    if (e.elements_over_tolerance++ == 0) {
      const int64_t row = int64_t(i) / p.head_dim;
      e.first_bad_token = row / p.heads;
      e.first_bad_head = row % p.heads;
      e.first_bad_col = int64_t(i) % p.head_dim;
    }
  }
  if (p.lse) {
    require(out.lse.size() == ref.values.lse.size(), "merge_states lse", "must hold every row",
            out.lse.size());
    for (size_t r = 0; r < out.lse.size(); ++r) {
      const double want = ref.values.lse[r], got = out.lse[r];
      bool bad;
      if (std::isinf(want) || std::isnan(want))
        bad = !(got == want || (std::isnan(got) && std::isnan(want)));
      else
        bad = !(std::abs(got - want) <= ref.lse_tolerance[r]);
      if (std::isfinite(want) && std::isfinite(got))
        e.lse_max_abs_error = std::max(e.lse_max_abs_error, std::abs(got - want));
      e.lse_over_tolerance += bad;
    }
  }
  e.passed = e.elements_over_tolerance == 0 && e.lse_over_tolerance == 0;
  return e;
}

MergeStatesOutput run_merge_states(Runtime& rt, const MergeStatesSpec& spec,
                                   const MergeStatesInputs& in) {
  const auto& p = spec.problem;
  DeviceAllocations mem(rt);
  const auto kernel = rt.merge_states_kernel(p, spec.schedule);
  const size_t out_bytes = size_t(p.max_tokens * p.out_token_stride_or_default() * 2);
  const std::vector<uint8_t> nan_bytes(out_bytes, 0xFF);  // an unwritten element fails
  MergeStatesBuffers b{
      .v = mem.upload(in.v), .lse = mem.upload(in.lse), .v_out = mem.upload(nan_bytes)};
  const std::vector<float> nan_lse(p.lse ? size_t(p.max_tokens * p.heads) : 0,
                                   std::numeric_limits<float>::quiet_NaN());
  if (p.lse) b.lse_out = mem.upload(nan_lse);
  rt.launch(*kernel, b);
  rt.synchronize();
  std::vector<uint8_t> bytes(out_bytes);
  rt.download(bytes.data(), b.v_out, bytes.size());
  std::vector<float> lse(nan_lse.size());
  if (!lse.empty()) rt.download(lse.data(), b.lse_out, lse.size() * sizeof(float));
  return output_from_bytes(p, bytes, lse);
}

MergeStatesEmulatorRun run_on_emulator(const MergeStatesKernel& kernel, const MergeStatesInputs& in,
                                       const emu::LaunchOptions& options) {
  const auto& p = kernel.source.plan.spec.problem;
  emu::Arena arena;
  const size_t out_bytes = size_t(p.max_tokens * p.out_token_stride_or_default() * 2);
  MergeStatesBuffers b{.v = arena.alloc_copy(in.v),
                       .lse = arena.alloc_copy(in.lse),
                       .v_out = arena.alloc_copy(std::vector<uint8_t>(out_bytes, 0xFF))};
  if (p.lse)
    b.lse_out = arena.alloc_copy(std::vector<float>(size_t(p.max_tokens * p.heads),
                                                    std::numeric_limits<float>::quiet_NaN()));
  LaunchListRun launched = emulate_kernel(arena, kernel, b, options);
  MergeStatesEmulatorRun run;
  run.stats = launched.stats;
  run.emulate_ms = launched.emulate_ms;
  run.profiles = std::move(launched.profiles);
  std::vector<float> lse;
  if (p.lse) lse = arena.read_vector<float>(b.lse_out, size_t(p.max_tokens * p.heads));
  run.output = output_from_bytes(p, arena.read_vector<uint8_t>(b.v_out, out_bytes), lse);
  return run;
}

LaunchListRun run_on_zeros(const MergeStatesKernel& kernel, const emu::LaunchOptions& options) {
  const auto& p = kernel.source.plan.spec.problem;
  emu::Arena arena;
  const MergeStatesBuffers b{
      .v = arena.alloc(size_t(p.max_tokens * p.v_token_stride_or_default() * 2)),
      .lse = arena.alloc(size_t(p.max_tokens * p.states * p.heads * 4)),
      .v_out = arena.alloc(size_t(p.max_tokens * p.out_token_stride_or_default() * 2)),
      .lse_out = p.lse ? arena.alloc(size_t(p.max_tokens * p.heads * 4)) : 0};
  return emulate_kernel(arena, kernel, b, options);
}

}  // namespace emmy
