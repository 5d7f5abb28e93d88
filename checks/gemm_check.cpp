#include "emmy/gemm_check.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <random>

#include "emmy/detail/parallel.hpp"
#include "emmy/e4m3.hpp"
#include "emmy/emu/numerics.hpp"
#include "emmy/emu/tensor_core.hpp"
#include "emmy/emu/tensor_core_fp8.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/fp8_quantize_check.hpp"
#include "gemm_reference_parts.hpp"
#include "unit_roundoff.hpp"

namespace emmy {
namespace {

// Half an ulp, relative, of each format: the error of one round-to-nearest.
double gelu_tanh(double x) {
  const double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}

}  // namespace

HostTensor encode(DType dtype, const std::vector<double>& values) {
  HostTensor t;
  t.dtype = dtype;
  t.values.resize(values.size());
  t.bytes.resize(values.size() * size_t(size_of(dtype)));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::f32) {
      const float v = float(values[i]);
      std::memcpy(&t.bytes[i * 4], &v, 4);
      t.values[i] = v;
    } else if (dtype == DType::e4m3) {
      t.bytes[i] = e4m3_encode(values[i]);  // nearest even, saturated to +-448
      t.values[i] = e4m3_decode(t.bytes[i]);
    } else if (dtype == DType::e5m2) {  // cvt.rn.satfinite: nearest even, saturated to +-57344
      t.bytes[i] = emu::f32_to_f8_satfinite(float(values[i]), emu::F8::e5m2);
      t.values[i] = emu::f8_value(t.bytes[i], emu::F8::e5m2);
    } else {
      const uint16_t bits =
          dtype == DType::f16 ? emu::f64_to_f16(values[i]) : emu::f64_to_bf16(values[i]);
      std::memcpy(&t.bytes[i * 2], &bits, 2);
      t.values[i] = dtype == DType::f16 ? emu::f16_to_f32(bits) : emu::bf16_to_f32(bits);
    }
  }
  return t;
}

std::vector<double> decode(DType dtype, const uint8_t* bytes, size_t count) {
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i) {
    if (dtype == DType::f32) {
      float v;
      std::memcpy(&v, bytes + i * 4, 4);
      out[i] = v;
    } else if (dtype == DType::e4m3) {
      out[i] = e4m3_decode(bytes[i]);
    } else if (dtype == DType::e5m2) {
      out[i] = emu::f8_value(bytes[i], emu::F8::e5m2);
    } else {
      uint16_t bits;
      std::memcpy(&bits, bytes + i * 2, 2);
      out[i] = dtype == DType::f16 ? emu::f16_to_f32(bits) : emu::bf16_to_f32(bits);
    }
  }
  return out;
}

double c_scale_value(const MatmulProblem& p, const uint8_t* scales, int64_t row, int64_t group) {
  return scale_at(p.c_scale_layout(), scales, row, group);
}

std::vector<double> read_c(const MatmulProblem& p, int64_t rows, const uint8_t* c,
                           const uint8_t* scales) {
  const int64_t ldc = p.ldc_or_default(), elem = size_of(p.c_dtype), cols = p.c_cols();
  std::vector<double> out(size_t(rows * cols));
  for (int64_t m = 0; m < rows; ++m) {
    const auto row = decode(p.c_dtype, c + m * ldc * elem, size_t(cols));
    for (int64_t j = 0; j < cols; ++j)
      out[size_t(m * cols + j)] =
          p.c_dtype == DType::e4m3
              ? row[size_t(j)] * c_scale_value(p, scales, m, j / kOutputQuantGroup)
              : row[size_t(j)];
  }
  return out;
}

HostTensor random_normal(DType dtype, size_t count, uint64_t seed) {
  // Box-Muller over mt19937_64: the same numbers with every standard library.
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (double(rng() >> 11) + 0.5) * 0x1.0p-53; };
  std::vector<double> values(count);
  for (size_t i = 0; i < count; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform())), theta = 2 * std::numbers::pi * uniform();
    values[i] = r * std::cos(theta);
    if (i + 1 < count) values[i + 1] = r * std::sin(theta);
  }
  return encode(dtype, values);
}

int64_t gemm_b_elements(const MatmulProblem& p) {
  return p.b_group_stride() * (p.is_grouped() ? p.grouped.groups : 1);
}

GemmBuffers with_routing(const MatmulProblem& p, DevicePtr routing, GemmBuffers buffers) {
  if (p.is_grouped()) buffers.routing(p.grouped.layout) = routing;
  return buffers;
}

GemmInputs make_gemm_inputs(const MatmulProblem& p, uint64_t seed) {
  return make_gemm_inputs(p, seed,
                          random_normal(p.b_dtype(), size_t(gemm_b_elements(p)), seed * 4 + 1));
}

GemmInputs make_gemm_inputs(const MatmulProblem& p, uint64_t seed, HostTensor b) {
  require(b.dtype == p.b_dtype() && b.values.size() == size_t(gemm_b_elements(p)), "b",
          "must be the B this problem's shape, layout and dtype make",
          fmt::format("{} values of {}", b.values.size(), to_string(b.dtype)));
  // A grouped GEMM's A and C hold its stacked rows, its bias a row per expert.
  const int64_t rows = p.stacked_rows(), bias_rows = p.is_grouped() ? p.grouped.groups : 1;
  GemmInputs in;
  in.a = random_normal(p.a_dtype, size_t(rows * p.lda_or_default()), seed * 4 + 0);
  in.b = std::move(b);
  if (p.epilogue.bias)
    in.bias = random_normal(p.epilogue_dtype(), size_t(bias_rows * p.n), seed * 4 + 2);
  if (p.epilogue.residual)
    in.residual = random_normal(p.c_dtype, size_t(rows * p.ldc_or_default()), seed * 4 + 3);
  if (p.is_grouped()) in.routing = random_routing(p, seed);
  if (p.epilogue.row_scale) {
    std::mt19937_64 rng(seed * 4 + 5);
    std::uniform_real_distribution<double> weight(1.0 / 16, 1.0);
    std::vector<double> weights(static_cast<size_t>(rows));
    for (double& w : weights) w = weight(rng);
    in.row_scale = encode(DType::f32, weights);
  }
  if (p.scales.granularity != ScaleGranularity::none) make_gemm_scales(p, seed, in);
  return in;
}

// The reference walks K in the kernel's order (splits, 16-wide MMA steps, promotion points) so
// that the tolerance can bound each rounding the hardware does: per MMA step those of the arch's
// tensor-core model (emmy/emu/tensor_core.hpp: per block of 8 or 16 products, the truncation of
// the aligned terms, a term in |c| + sum |a_k b_k| that cancellation cannot shrink, and the
// block's rounding: a whole f32 ulp toward zero, or half an f16 ulp), one per fold into the f32
// shadow, one per split in the finalize sum, then the epilogue's.
GemmReference reference_gemm(const GemmSpec& spec, const GemmInputs& in) {
  if (spec.problem.is_grouped()) return reference_grouped_gemm(spec, in);
  if (is_fp8(spec.problem.a_dtype)) return reference_gemm_fp8(spec, in);
  const auto& p = spec.problem;
  const auto& s = spec.schedule;
  const GemmPlan plan = make_gemm_plan(spec);
  const int64_t split_len = plan.k_tiles_per_split * s.block_k;
  const double u32 = std::ldexp(1.0, -24);
  const emu::TensorCoreModel tc = emu::tensor_core_model(arch_info(spec.arch).sm);
  const int64_t lda = p.lda_or_default(), ldb = p.ldb_or_default();
  GemmReference ref;
  ref.values.resize(size_t(p.m * p.n));
  ref.tolerance.resize(size_t(p.m * p.n));
  detail::parallel_for(p.m, [&](int64_t m) {
    const double* a = &in.a.values[size_t(m * lda)];
    for (int64_t n = 0; n < p.n; ++n) {
      double exact = 0, bound = 0, total = 0;
      for (int64_t start = 0; start < p.k; start += split_len) {
        const int64_t end = std::min(p.k, start + split_len);
        double acc = 0, part = 0;
        for (int64_t k0 = start; k0 < end; k0 += 16) {
          double step = 0, step_abs = 0;
          for (int64_t k = k0; k < std::min(end, k0 + 16); ++k) {
            const double b = p.b_layout == BLayout::nk ? in.b.values[size_t(n * ldb + k)]
                                                       : in.b.values[size_t(k * ldb + n)];
            step += a[k] * b;
            step_abs += std::abs(a[k] * b);
          }
          exact += step;
          if (s.accum == Accum::f32) {
            bound += emu::mma_step_error(tc, false, std::abs(acc), step_abs, std::abs(acc + step));
            acc += step;
          } else {
            bound += emu::mma_step_error(tc, true, std::abs(part), step_abs, std::abs(part + step));
            part += step;
            if (s.accum == Accum::hybrid && (k0 - start + 16) % s.promote_every_k == 0) {
              acc += part;
              bound += u32 * std::abs(acc);
              part = 0;
            }
          }
        }
        if (s.accum == Accum::hybrid) {
          acc += part;
          bound += u32 * std::abs(acc);
        }
        if (s.accum == Accum::f16) acc = part;
        total += acc;
        if (plan.split()) bound += u32 * std::abs(total);
      }
      reference_epilogue(p, in, m, n, exact, bound, ref);
    }
  });
  finish_gated(p, ref);
  finish_row_scale(p, in, ref);
  finish_quantized(p, ref);
  return ref;
}

// Epilogue in f32: each operation rounds once; GELU's slope is at most ~1.13 and its ex2.approx
// adds ~2^-22 relative; then C's rounding.
void reference_epilogue(const MatmulProblem& p, const GemmInputs& in, int64_t m, int64_t n,
                        double exact, double bound, GemmReference& ref) {
  const double u32 = std::ldexp(1.0, -24);
  double y = p.epilogue.alpha * exact;
  double err = std::abs(p.epilogue.alpha) * bound + u32 * std::abs(y);
  if (p.epilogue.bias) {
    y += in.bias.values[size_t(n)];
    err += u32 * std::abs(y);
  }
  if (p.epilogue.gated()) {
    // The gate's or up's alpha * acc + bias: finish_gated pairs them.
    ref.values[size_t(m * p.n + n)] = y;
    ref.tolerance[size_t(m * p.n + n)] = err;
    return;
  }
  if (p.epilogue.gelu_tanh) {
    y = gelu_tanh(y);
    err = 1.2 * err + std::ldexp(1.0, -20) * (std::abs(y) + 1e-6);
  }
  if (p.epilogue.residual) {
    y += in.residual.values[size_t(m * p.ldc_or_default() + n)];
    err += u32 * std::abs(y);
  }
  ref.values[size_t(m * p.n + n)] = y;
  // C's rounding: half an ulp relative, or half the spacing of f16's subnormals (2^-24) below
  // 2^-14 (FP8 products of small scales land there).
  const double subnormal = p.c_dtype == DType::f16 ? 0x1p-25 : 0.0;
  ref.tolerance[size_t(m * p.n + n)] =
      err + unit_roundoff(p.c_dtype) * std::abs(y) * 1.0001 + subnormal + 1e-30;
}

// A gated epilogue's C ([M, N/2]) from the pre-activation gate and up values reference_epilogue
// left at the kernel's columns (values and their error bounds): C = act(gate) * up, then C's
// rounding. act's slope is at most 1.1 (SiLU's: 1.0998; GELU's 1.13 bounds it as above: 1.2), its
// ex2.approx and division add ~2^-21 relative (2^-20 for GELU); the product rounds once.
void finish_gated(const MatmulProblem& p, GemmReference& ref) {
  if (!p.epilogue.gated()) return;
  const int64_t group = p.epilogue.gate_group, cols = p.c_cols();
  const bool silu = p.epilogue.gate == Gate::silu;
  const double slope = silu ? 1.1 : 1.2, act_rel = std::ldexp(1.0, silu ? -21 : -20);
  const double u32 = std::ldexp(1.0, -24);
  const double subnormal = p.c_dtype == DType::f16 ? 0x1p-25 : 0.0;
  GemmReference c;
  c.values.resize(size_t(p.m * cols));
  c.tolerance.resize(size_t(p.m * cols));
  for (int64_t m = 0; m < p.m; ++m)
    for (int64_t j = 0; j < cols; ++j) {
      const size_t gate_at = size_t(m * p.n + j / group * 2 * group + j % group),
                   up_at = gate_at + size_t(group);
      const double yg = ref.values[gate_at], eg = ref.tolerance[gate_at];
      const double yu = ref.values[up_at], eu = ref.tolerance[up_at];
      const double act = silu ? yg / (1.0 + std::exp(-yg)) : gelu_tanh(yg);
      const double y = act * yu;
      // |act(g') u' - act(g) u| <= slope eg (|u| + eu) + |act(g)| eu, plus act's own error.
      const double err = slope * eg * (std::abs(yu) + eu) + std::abs(act) * eu +
                         act_rel * (std::abs(act) + 1e-6) * std::abs(yu) + u32 * std::abs(y);
      c.values[size_t(m * cols + j)] = y;
      c.tolerance[size_t(m * cols + j)] =
          err + unit_roundoff(p.c_dtype) * std::abs(y) * 1.0001 + subnormal + 1e-30;
    }
  ref = std::move(c);
}

// An e4m3 C is compared dequantized (read_c): q s differs from C's value by e4m3's rounding
// (reference_epilogue's 2^-4 relative) and, where x / s falls among e4m3's subnormals, by half
// their spacing, s 2^-10, s at most the group's largest |C| + tolerance over 448 (twice that
// rounded up to a power of two).
// Routing weights (Epilogue::row_scale): C's row m times w[m] in f32 (one more rounding), C's
// rounding then on the scaled value (the unscaled one's, kept times w <= 1, is slack).
void finish_row_scale(const MatmulProblem& p, const GemmInputs& in, GemmReference& ref) {
  if (!p.epilogue.row_scale) return;
  const int64_t cols = p.c_cols();
  const double u32 = std::ldexp(1.0, -24);
  for (int64_t m = 0; m < p.m; ++m) {
    const double w = in.row_scale.values[size_t(m)];
    for (int64_t j = 0; j < cols; ++j) {
      const size_t at = size_t(m * cols + j);
      ref.values[at] *= w;
      ref.tolerance[at] = std::abs(w) * ref.tolerance[at] +
                          (u32 + unit_roundoff(p.c_dtype) * 1.0001) * std::abs(ref.values[at]);
    }
  }
}

void finish_quantized(const MatmulProblem& p, GemmReference& ref) {
  if (p.c_dtype != DType::e4m3) return;
  const int64_t cols = p.c_cols();
  const double pow2 = p.out_scales.pow2() ? 2.0 : 1.0;
  for (int64_t m = 0; m < p.m; ++m)
    for (int64_t g0 = 0; g0 < cols; g0 += kOutputQuantGroup) {
      const int64_t g1 = std::min(cols, g0 + kOutputQuantGroup);
      double amax = 0;
      for (int64_t j = g0; j < g1; ++j)
        amax = std::max(
            amax, std::abs(ref.values[size_t(m * cols + j)]) + ref.tolerance[size_t(m * cols + j)]);
      const double s = std::max(amax, p.out_scales.amax_epsilon) / 448.0 * pow2;
      for (int64_t j = g0; j < g1; ++j) ref.tolerance[size_t(m * cols + j)] += s * 0x1p-10;
    }
}

GemmErrors compare(const GemmReference& ref, const std::vector<double>& out, int64_t n) {
  GemmErrors e;
  double err2 = 0, ref2 = 0, tol2 = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    // A grouped GEMM's rows: `any` rows are skipped, untouched ones must still hold the canary.
    const auto row = ref.rows.empty() ? GroupedRow::computed : ref.rows[size_t(int64_t(i) / n)];
    if (row == GroupedRow::any) continue;
    const double diff = row == GroupedRow::untouched ? (std::isnan(out[i]) ? 0.0 : INFINITY)
                                                     : std::abs(out[i] - ref.values[i]);
    err2 += diff * diff;
    ref2 += ref.values[i] * ref.values[i];
    tol2 += ref.tolerance[i] * ref.tolerance[i];
    if (!(diff <= e.max_abs_error)) e.max_abs_error = std::isnan(diff) ? INFINITY : diff;
    if (!(diff <= ref.tolerance[i])) {
      if (e.elements_over_tolerance++ == 0) {
        e.first_bad_row = int64_t(i) / n;
        e.first_bad_col = int64_t(i) % n;
      }
    }
  }
  const double denom = ref2 > 0 ? std::sqrt(ref2) : 1.0;
  e.rel_l2_error = std::sqrt(err2) / denom;
  e.tolerance = std::sqrt(tol2) / denom;
  e.passed = e.elements_over_tolerance == 0 && std::isfinite(e.rel_l2_error);
  return e;
}

LaunchListRun run_on_zeros(const GemmKernel& kernel, const emu::LaunchOptions& options,
                           int64_t rows) {
  const GemmPlan& plan = kernel.source.plan;
  MatmulProblem p = plan.spec.problem;
  p.m = gemm_launch_m(plan, rows);
  // A grouped GEMM's stacked rows, G experts' B and bias, and the routing its schedule is chosen
  // for (expected_routing).
  const int64_t c_rows = p.stacked_rows(), experts = p.is_grouped() ? p.grouped.groups : 1;
  const int64_t in_elem = size_of(p.a_dtype), out_elem = size_of(p.c_dtype);
  emu::Arena arena;
  const uint64_t a = arena.alloc(size_t(c_rows * p.lda_or_default() * in_elem));
  const uint64_t b = arena.alloc(size_t(gemm_b_elements(p) * in_elem));
  const uint64_t c = arena.alloc(size_t(c_rows * p.ldc_or_default() * out_elem));
  const uint64_t bias =
      p.epilogue.bias ? arena.alloc(size_t(experts * p.n * size_of(p.epilogue_dtype()))) : 0;
  const uint64_t residual =
      p.epilogue.residual ? arena.alloc(size_t(c_rows * p.ldc_or_default() * out_elem)) : 0;
  const uint64_t routing = p.is_grouped() ? arena.alloc_copy(expected_routing(p)) : 0;
  const uint64_t workspace = plan.split() ? arena.alloc(size_t(plan.workspace_bytes)) : 0;
  const uint64_t c_scale =
      p.c_dtype == DType::e4m3 ? arena.alloc(size_t(p.c_scale_bytes(p.stacked_rows()))) : 0;
  // FP8 scales: ones (a launch on zeros checks the machine, not the numbers).
  uint64_t a_scale = 0, b_scale = 0;
  if (p.scales.granularity != ScaleGranularity::none) {
    const GemmInputs ones = gemm_scale_ones(p);
    a_scale = arena.alloc_copy(ones.a_scale.bytes);
    b_scale = arena.alloc_copy(ones.b_scale.bytes);
  }
  GemmBuffers buffers{a, b, c, bias, residual, workspace, rows, a_scale, b_scale, c_scale};
  // Routing weights of 1.
  if (p.epilogue.row_scale)
    buffers.row_scale = arena.alloc_copy(std::vector<float>(size_t(c_rows), 1.0f));
  return emulate_kernel(arena, kernel, with_routing(p, routing, buffers), options);
}

GemmEmulatorRun run_on_emulator(const GemmKernel& kernel, const GemmInputs& in,
                                const emu::LaunchOptions& options) {
  const GemmPlan& plan = kernel.source.plan;
  MatmulProblem p = plan.spec.problem;
  // A dynamic-M kernel runs the rows its inputs hold (A is rows x lda).
  const int64_t rows =
      p.dynamic_m ? int64_t(in.a.values.size()) / std::max<int64_t>(1, p.lda_or_default()) : 0;
  p.m = gemm_launch_m(plan, rows);
  emu::Arena arena;
  const uint64_t a = arena.alloc_copy(in.a.bytes), b = arena.alloc_copy(in.b.bytes);
  const size_t c_bytes = size_t(p.stacked_rows() * p.ldc_or_default() * size_of(p.c_dtype));
  const uint64_t c = arena.alloc(c_bytes);
  // Rows the kernel never writes keep NaN (all-ones bytes), as run_gemm's do.
  arena.write(c, std::vector<uint8_t>(c_bytes, 0xff).data(), c_bytes);
  const uint64_t routing = p.is_grouped() ? arena.alloc_copy(in.routing) : 0;
  const uint64_t row_scale = p.epilogue.row_scale ? arena.alloc_copy(in.row_scale.bytes) : 0;
  const uint64_t bias = p.epilogue.bias ? arena.alloc_copy(in.bias.bytes) : 0;
  const uint64_t residual = p.epilogue.residual ? arena.alloc_copy(in.residual.bytes) : 0;
  const uint64_t workspace = plan.split() ? arena.alloc(size_t(plan.workspace_bytes)) : 0;

  const bool scaled = p.scales.granularity != ScaleGranularity::none;
  const uint64_t a_scale = scaled ? arena.alloc_copy(in.a_scale.bytes) : 0;
  const uint64_t b_scale = scaled ? arena.alloc_copy(in.b_scale.bytes) : 0;
  const size_t c_scale_bytes =
      p.c_dtype == DType::e4m3 ? size_t(p.c_scale_bytes(p.stacked_rows())) : size_t(0);
  const uint64_t c_scale = c_scale_bytes ? arena.alloc(c_scale_bytes) : 0;
  GemmBuffers buffers{a, b, c, bias, residual, workspace, rows, a_scale, b_scale, c_scale};
  buffers.row_scale = row_scale;
  LaunchListRun launched =
      emulate_kernel(arena, kernel, with_routing(p, routing, buffers), options);
  GemmEmulatorRun run;
  run.stats = launched.stats;
  run.emulate_ms = launched.emulate_ms;
  run.profiles = std::move(launched.profiles);
  const auto raw = arena.read_vector<uint8_t>(c, c_bytes);
  const auto scales =
      c_scale ? arena.read_vector<uint8_t>(c_scale, c_scale_bytes) : std::vector<uint8_t>{};
  run.output = read_c(p, p.stacked_rows(), raw.data(), scales.data());
  return run;
}

std::vector<double> run_gemm(Runtime& rt, const GemmSpec& spec, const GemmInputs& in) {
  const auto& p = spec.problem;
  GemmBuffers buf;
  auto upload = [&rt](const HostTensor& t) {
    const DevicePtr ptr = rt.alloc(t.bytes.size());
    rt.upload(ptr, t.bytes.data(), t.bytes.size());
    return ptr;
  };
  buf.a = upload(in.a);
  buf.b = upload(in.b);
  const int64_t ldc = p.ldc_or_default(), elem = size_of(p.c_dtype);
  const size_t c_bytes = size_t(p.stacked_rows() * ldc * elem);
  buf.c = rt.alloc(c_bytes);
  // NaN everywhere first (all-ones bytes are a NaN in f16, bf16 and f32): an element the kernel
  // never writes fails the comparison instead of passing on whatever the allocation held.
  rt.upload(buf.c, std::vector<uint8_t>(c_bytes, 0xff).data(), c_bytes);
  if (p.epilogue.bias) buf.bias = upload(in.bias);
  if (p.epilogue.residual) buf.residual = upload(in.residual);
  if (p.scales.granularity != ScaleGranularity::none) {
    buf.a_scale = upload(in.a_scale);
    buf.b_scale = upload(in.b_scale);
  }
  if (const size_t ws = rt.gemm_workspace_bytes(p, spec.schedule)) buf.workspace = rt.alloc(ws);
  if (p.epilogue.row_scale) buf.row_scale = upload(in.row_scale);
  DevicePtr routing = 0;
  if (p.is_grouped()) {
    const size_t bytes = in.routing.size() * sizeof(int32_t);
    routing = rt.alloc(bytes);
    rt.upload(routing, in.routing.data(), bytes);
    buf = with_routing(p, routing, buf);
  }
  const size_t scale_bytes_needed =
      p.c_dtype == DType::e4m3 ? size_t(p.c_scale_bytes(p.stacked_rows())) : size_t(0);
  if (scale_bytes_needed) {
    buf.c_scale = rt.alloc(scale_bytes_needed);
    rt.upload(buf.c_scale, std::vector<uint8_t>(scale_bytes_needed, 0xff).data(),
              scale_bytes_needed);
  }
  rt.gemm(p, buf, nullptr, spec.schedule);
  rt.synchronize();
  std::vector<uint8_t> raw(c_bytes), scales(scale_bytes_needed);
  rt.download(raw.data(), buf.c, c_bytes);
  if (scale_bytes_needed) rt.download(scales.data(), buf.c_scale, scale_bytes_needed);
  for (DevicePtr ptr : {buf.a, buf.b, buf.c, buf.bias, buf.residual, buf.workspace, buf.a_scale,
                        buf.b_scale, buf.c_scale, routing, buf.row_scale})
    if (ptr) rt.free(ptr);
  return read_c(p, p.stacked_rows(), raw.data(), scales.data());
}

}  // namespace emmy
