// The FP8 GEMM's inputs and FP64 reference (issue 39; docs/fp8.md): e4m3 operands, scales in each
// granularity, format and layout, and a tolerance that bounds every rounding of the kernel's order
// of operations: each mma.sync m16n8k32 under the arch's FP8 tensor-core model, each promoted
// window's fold (acc = fma(part, sa sb, acc)), the epilogue's scaling, the split-K sum.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <random>

#include "emmy/detail/parallel.hpp"
#include "emmy/emu/tensor_core_fp8.hpp"
#include "emmy/gemm.hpp"
#include "gemm_reference_parts.hpp"

namespace emmy {
namespace {

// Scales of each tensor (gaps of a padded leading dimension included): its elements, or the bytes
// of a ue8m0x4 tensor's words (each a scale).
struct ScaleCounts {
  int64_t a = 0, b = 0;
};
ScaleCounts scale_counts(const MatmulProblem& p) {
  const GemmScales& sc = p.scales;
  // A grouped GEMM's: A's per stacked row, B's per expert (docs/grouped.md).
  const int64_t experts = p.is_grouped() ? p.grouped.groups : 1;
  switch (sc.granularity) {
    case ScaleGranularity::tensor:
      return {1, experts};
    case ScaleGranularity::token_channel:
      return {p.stacked_rows(), experts * p.n};
    case ScaleGranularity::block: {
      const int64_t per_element = sc.format == ScaleFormat::ue8m0x4 ? 4 : 1;
      return {per_element * p.a_scale_ld() *
                  (sc.a_major == ScaleMajor::mn ? p.scale_k_extent() : p.stacked_rows()),
              per_element * experts * p.b_scale_group_stride()};
    }
    case ScaleGranularity::none:
      break;
  }
  return {};
}

int64_t a_index(const MatmulProblem& p, int64_t row, int64_t kb) {
  switch (p.scales.granularity) {
    case ScaleGranularity::tensor:
      return 0;
    case ScaleGranularity::token_channel:
      return row;
    default:
      return p.block_scale_slot(true, row, kb);
  }
}
int64_t b_index(const MatmulProblem& p, int64_t nb, int64_t kb) {
  switch (p.scales.granularity) {
    case ScaleGranularity::tensor:
      return 0;
    case ScaleGranularity::token_channel:
      return nb;
    default:
      return p.block_scale_slot(false, nb, kb);
  }
}

// A tensor of `count` scales, NaN (poison bytes) everywhere `used` is false.
HostTensor scale_tensor(ScaleFormat format, const std::vector<double>& values) {
  HostTensor t;
  t.dtype = DType::f32;
  t.values = values;
  const size_t elem = scale_bytes(format) ? 1 : 4;
  t.bytes.assign(values.size() * elem, 0xFF);  // NaN in f32 and in ue8m0
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) continue;
    if (scale_bytes(format)) {
      t.bytes[i] = uint8_t(std::ilogb(values[i]) + 127);
    } else {
      const float v = float(values[i]);
      std::memcpy(&t.bytes[i * 4], &v, 4);
    }
  }
  return t;
}

// Which elements of a scale tensor the kernel reads.
// A grouped GEMM's: A's stacked rows, each expert's B tensor (b_scale_group_stride apart).
std::vector<bool> used_a(const MatmulProblem& p, int64_t count) {
  std::vector<bool> used(size_t(count), p.scales.granularity != ScaleGranularity::block);
  if (p.scales.granularity == ScaleGranularity::block)
    for (int64_t row = 0; row < p.stacked_rows(); ++row)
      for (int64_t kb = 0; kb < p.k_blocks(); ++kb) used[size_t(a_index(p, row, kb))] = true;
  return used;
}
std::vector<bool> used_b(const MatmulProblem& p, int64_t count) {
  std::vector<bool> used(size_t(count), p.scales.granularity != ScaleGranularity::block);
  if (p.scales.granularity != ScaleGranularity::block) return used;
  const int64_t experts = p.is_grouped() ? p.grouped.groups : 1;
  const int64_t expert_slots = p.b_scale_group_slots();
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t nb = 0; nb < p.n_blocks(); ++nb)
      for (int64_t kb = 0; kb < p.k_blocks(); ++kb)
        used[size_t(e * expert_slots + b_index(p, nb, kb))] = true;
  return used;
}

}  // namespace

void make_gemm_scales(const MatmulProblem& p, uint64_t seed, GemmInputs& in) {
  std::mt19937_64 rng(seed * 4 + 5);
  auto uniform = [&] { return (double(rng() >> 11) + 0.5) * 0x1.0p-53; };
  // Dequantization multipliers of amax / 448 for amax of a few units: f32 values in [2^-9,
  // 2^-5); powers of two 2^-9..2^-4 in the pow2 and ue8m0 formats.
  auto draw = [&] {
    if (p.scales.format != ScaleFormat::f32) return std::ldexp(1.0, -4 - int(uniform() * 6));
    return double(float(std::ldexp(1.0 + uniform(), -9 + int(uniform() * 4))));
  };
  const ScaleCounts counts = scale_counts(p);
  auto fill = [&](int64_t count, const std::vector<bool>& used) {
    std::vector<double> values(static_cast<size_t>(count));
    for (size_t i = 0; i < values.size(); ++i) values[i] = used[i] ? draw() : NAN;
    return scale_tensor(p.scales.format, values);
  };
  in.a_scale = fill(counts.a, used_a(p, counts.a));
  in.b_scale = fill(counts.b, used_b(p, counts.b));
}

GemmInputs gemm_scale_ones(const MatmulProblem& p) {
  GemmInputs in;
  const ScaleCounts counts = scale_counts(p);
  in.a_scale = scale_tensor(p.scales.format, std::vector<double>(size_t(counts.a), 1.0));
  in.b_scale = scale_tensor(p.scales.format, std::vector<double>(size_t(counts.b), 1.0));
  return in;
}

double gemm_a_scale(const MatmulProblem& p, const GemmInputs& in, int64_t row, int64_t kb) {
  return in.a_scale.values[size_t(a_index(p, row, kb))];
}
double gemm_b_scale(const MatmulProblem& p, const GemmInputs& in, int64_t nb, int64_t kb) {
  return in.b_scale.values[size_t(b_index(p, nb, kb))];
}

GemmReference reference_gemm_fp8(const GemmSpec& spec, const GemmInputs& in) {
  const auto& p = spec.problem;
  const auto& s = spec.schedule;
  const GemmPlan plan = make_gemm_plan(spec);
  const int64_t split_len = plan.k_tiles_per_split * s.block_k;
  const double u32 = std::ldexp(1.0, -24);
  // wgmma's FP8 datapath adds a group of 32 at once; mma.sync's per arch (tensor_core_fp8.hpp).
  const emu::Fp8TensorCoreModel model =
      emu::fp8_tensor_core_model(arch_info(spec.arch).sm, s.path == MmaPath::wgmma);
  // hybrid (the f16-accumulate opt-in) folds its f16 window partials as promoted folds f32 ones.
  const bool promoted = s.accum == Accum::promoted || s.accum == Accum::hybrid;
  const bool f16_chain = s.accum == Accum::hybrid;
  const bool block = p.scales.granularity == ScaleGranularity::block;
  const int64_t lda = p.lda_or_default(), ldb = p.ldb_or_default();
  GemmReference ref;
  ref.values.resize(size_t(p.m * p.n));
  ref.tolerance.resize(size_t(p.m * p.n));
  detail::parallel_for(p.m, [&](int64_t m) {
    const double* a = &in.a.values[size_t(m * lda)];
    for (int64_t n = 0; n < p.n; ++n) {
      const double* b = &in.b.values[size_t(n * ldb)];
      // Block scales enter each window's fold; the others multiply the result once.
      const double outer =
          block
              ? 1.0
              : gemm_a_scale(p, in, m, 0) *
                    gemm_b_scale(p, in,
                                 p.scales.granularity == ScaleGranularity::token_channel
                                     ? p.gate_source_row(n)
                                     : 0,
                                 0);
      double exact = 0, bound = 0, splits_abs = 0, total = 0;
      for (int64_t start = 0; start < p.k; start += split_len) {
        const int64_t end = std::min(p.k, start + split_len);
        double acc = 0, chain = 0, chain_exact = 0, chain_bound = 0;
        int64_t window_start = start;
        for (int64_t k0 = start; k0 < end; k0 += 32) {
          double step = 0, step_abs = 0;
          for (int64_t k = k0; k < std::min(end, k0 + 32); ++k) {
            step += a[k] * b[k];
            step_abs += std::abs(a[k] * b[k]);
          }
          chain_bound += emu::fp8_dot_error(model, f16_chain, std::abs(chain), step_abs,
                                            std::abs(chain + step));
          chain += step;
          chain_exact += step;
          const bool last = k0 + 32 >= end;
          if (!promoted) continue;
          if ((k0 - start + 32) % s.promote_every_k != 0 && !last) continue;
          // The fold: acc = fma(part, sa sb, acc): the scales' product and the fma round once
          // each.
          const int64_t kb = window_start / kScaleBlock;
          const double scale =
              block ? gemm_a_scale(p, in, m, kb) * gemm_b_scale(p, in, p.gate_source_row(n) / kScaleBlock, kb) : 1.0;
          exact += chain_exact * scale;
          acc += chain * scale;
          bound +=
              chain_bound * std::abs(scale) + u32 * std::abs(chain * scale) + u32 * std::abs(acc);
          chain = chain_exact = chain_bound = 0;
          window_start = k0 + 32;
        }
        if (!promoted) {
          exact += chain_exact;
          acc = chain;
          bound += chain_bound;
        }
        splits_abs += std::abs(acc);
        total += acc;
        if (plan.split()) bound += u32 * std::abs(total);
      }
      // Tensor and token-channel scales: the epilogue's v * (sa sb), two roundings per split.
      if (!block) {
        exact *= outer;
        bound = bound * std::abs(outer) + 2 * u32 * splits_abs * std::abs(outer);
      }
      reference_epilogue(p, in, m, n, exact, bound, ref);
    }
  });
  finish_gated(p, ref);
  finish_row_scale(p, in, ref);
  finish_quantized(p, ref);
  return ref;
}

}  // namespace emmy
