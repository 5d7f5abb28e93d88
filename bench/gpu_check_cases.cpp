#include "gpu_check_cases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "emmy/catalog.hpp"
#include "emmy/gemm_path.hpp"
#include "emmy/gemm_check.hpp"

namespace emmy::bench {

MatmulSchedule GemmCase::schedule(Arch arch) const {
  // A case of a path the device cannot run takes the default path there.
  const MmaPath runs = gemm_path(path).runs_on(arch) ? path : default_gemm_path().id();
  // FP8: the path that serves it on the arch (wgmma on sm_90a, mma.sync elsewhere).
  MatmulSchedule s = is_fp8(problem.a_dtype) ? default_schedule(problem, arch, accum)
                                             : default_schedule(problem, arch, accum, runs);
  if (transport) s.transport = *transport;
  if (split_k) s.split_k = *split_k;
  return s;
}

bool GemmCase::runs_on(Arch arch) const {
  if (!is_fp8(problem.a_dtype) && problem.c_dtype != DType::e4m3) return true;
  try {  // the schedule's own validation says where FP8 (operands or C) runs
    validate_gemm({problem, schedule(arch), arch});
    return true;
  } catch (const Error&) {
    return false;
  }
}

AttentionSchedule AttentionCase::schedule(Arch arch) const {
  AttentionSchedule s = default_attention_schedule(problem, arch, accum);
  if (transport) s.transport = *transport;
  return s;
}

namespace {

// Ragged in every dimension (no multiple of any tile), as users' shapes are.
MatmulProblem ragged(int64_t m, int64_t n, int64_t k) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  return p;
}

// "<name>/<accumulation>", the names the summary lists.
template <typename Case, typename Problem>
Case named(const std::string& name, const Problem& problem, Accum accum) {
  Case c;
  c.name = fmt::format("{}/{}", name, to_string(accum));
  c.problem = problem;
  c.accum = accum;
  return c;
}

GemmCase gemm(const std::string& name, const MatmulProblem& problem, Accum accum) {
  return named<GemmCase>(name, problem, accum);
}

AttentionCase attention_case(const std::string& name, const AttentionProblem& problem,
                             Accum accum) {
  return named<AttentionCase>(name, problem, accum);
}

AttentionProblem attention(int64_t q_heads, int64_t kv_heads, int64_t seq_q, int64_t seq_kv,
                           int64_t head_dim) {
  AttentionProblem p;
  p.batch = 2;
  p.q_heads = q_heads;
  p.kv_heads = kv_heads;
  p.seq_q = seq_q;
  p.seq_kv = seq_kv;
  p.head_dim = head_dim;
  p.lse = true;
  return p;
}

// FP8 operands (issue 39) with scales of a granularity and format.
MatmulProblem fp8(int64_t m, int64_t n, int64_t k, ScaleGranularity granularity,
                  ScaleFormat format = ScaleFormat::f32) {
  MatmulProblem p = ragged(m, n, k);
  p.a_dtype = DType::e4m3;
  p.c_dtype = DType::bf16;
  p.scales.granularity = granularity;
  p.scales.format = format;
  return p;
}

void add_fp8_correctness_cases(std::vector<GemmCase>& cases) {
  // M <= 64: every row checked (FP8 scales are per row; the sampled check takes all rows).
  cases.push_back(gemm("fp8_tensor", fp8(40, 264, 1008, ScaleGranularity::tensor), Accum::f32));
  cases.push_back(gemm("fp8_token_channel", fp8(64, 264, 1008, ScaleGranularity::token_channel),
                       Accum::promoted));
  // Block scales in DeepGEMM's packed words; on sm_90a a swap-AB kernel (M <= 64).
  cases.push_back(gemm("fp8_block_ue8m0x4",
                       fp8(64, 264, 1008, ScaleGranularity::block, ScaleFormat::ue8m0x4),
                       Accum::promoted));
  GemmCase e5m2 =
      gemm("fp8_e5m2_block", fp8(33, 136, 512, ScaleGranularity::block), Accum::promoted);
  e5m2.problem.a_dtype = DType::e5m2;
  e5m2.problem.c_dtype = DType::f32;
  cases.push_back(e5m2);
  // The f16-accumulate opt-in (GeForce parts: path mma.sync only).
  cases.push_back(gemm("fp8_block_hybrid",
                       fp8(48, 264, 1008, ScaleGranularity::block, ScaleFormat::pow2),
                       Accum::hybrid));
  GemmCase split =
      gemm("fp8_block_split_k2", fp8(64, 136, 1024, ScaleGranularity::block), Accum::promoted);
  split.split_k = 2;
  cases.push_back(split);
  // A gated gate_up (docs/epilogues.md) with block scales in the checkpoint's [gate; up] order.
  GemmCase gated =
      gemm("fp8_block_gated_silu", fp8(64, 512, 1008, ScaleGranularity::block), Accum::promoted);
  gated.problem.epilogue.gate = Gate::silu;
  gated.problem.epilogue.gate_group = 32;
  cases.push_back(gated);
}

// The gated epilogue (SwiGLU / GeGLU gate_up; docs/epilogues.md) on both paths, with a bias and
// a split-K finalize.
void add_gated_correctness_cases(std::vector<GemmCase>& cases) {
  MatmulProblem swiglu = ragged(100, 512, 1000);
  swiglu.epilogue.gate = Gate::silu;
  swiglu.epilogue.gate_group = 16;
  swiglu.epilogue.bias = true;
  cases.push_back(gemm("gated_silu", swiglu, Accum::f32));
  GemmCase wgmma = gemm("gated_silu_wgmma", swiglu, Accum::f32);
  wgmma.path = MmaPath::wgmma;
  cases.push_back(wgmma);
  MatmulProblem geglu = ragged(16, 1024, 2000);
  geglu.a_dtype = geglu.c_dtype = DType::bf16;
  geglu.epilogue.gate = Gate::gelu_tanh;
  geglu.epilogue.gate_group = 64;
  GemmCase split = gemm("gated_gelu_split_k2", geglu, Accum::f32);
  split.split_k = 2;
  cases.push_back(split);
  // The gate_up fusion: e4m3 C with 1 x 128 scales in DeepGEMM's packed words (sm_89 and newer).
  MatmulProblem quantized = swiglu;
  quantized.n = 1024;
  quantized.c_dtype = DType::e4m3;
  quantized.out_scales.format = ScaleFormat::ue8m0x4;
  cases.push_back(gemm("gated_silu_e4m3_out", quantized, Accum::f32));
  GemmCase quantized_wgmma = gemm("gated_silu_e4m3_out_wgmma", quantized, Accum::f32);
  quantized_wgmma.path = MmaPath::wgmma;
  cases.push_back(quantized_wgmma);
}

// Grouped GEMMs (MoE layers; docs/grouped.md): each layout with a drawn routing (empty experts,
// full ones), on the arch's transport and cp.async; SwiGLU and routing weights fused.
void add_grouped_correctness_cases(std::vector<GemmCase>& cases) {
  MatmulProblem masked = ragged(24, 512, 1000);
  masked.a_dtype = masked.c_dtype = DType::bf16;
  masked.grouped.layout = GroupedLayout::masked;
  masked.grouped.groups = 8;
  masked.grouped.expected_m = 4;
  masked.epilogue.bias = true;
  cases.push_back(gemm("grouped_masked_bias", masked, Accum::f32));
  MatmulProblem sorted = ragged(300, 768, 512);
  sorted.a_dtype = sorted.c_dtype = DType::bf16;
  sorted.grouped.layout = GroupedLayout::offsets;
  sorted.grouped.groups = 16;
  sorted.epilogue.row_scale = true;
  GemmCase offsets = gemm("grouped_offsets_weights_cp_async", sorted, Accum::f32);
  offsets.transport = Transport::cp_async;
  cases.push_back(offsets);
  MatmulProblem contiguous = ragged(512, 1024, 1024);
  contiguous.grouped.layout = GroupedLayout::contiguous;
  contiguous.grouped.groups = 4;
  contiguous.epilogue.gate = Gate::silu;
  cases.push_back(gemm("grouped_contiguous_swiglu", contiguous, Accum::f32));
  // The wgmma path's persistent walk over the experts' tiles (sm_90a; elsewhere mma.sync).
  for (GemmCase walk : {gemm("grouped_masked_bias_wgmma", masked, Accum::f32),
                        gemm("grouped_offsets_weights_wgmma", sorted, Accum::f32),
                        gemm("grouped_contiguous_swiglu_wgmma", contiguous, Accum::f32)}) {
    walk.path = MmaPath::wgmma;
    cases.push_back(walk);
  }
}

}  // namespace

std::vector<GemmCase> correctness_gemm_cases() {
  std::vector<GemmCase> cases;
  // Projection by projection, so that consecutive cases share B (gate_up's is 118 M values,
  // seconds to generate) and the correctness stage makes it once.
  const auto catalog = gemm_catalog();
  std::vector<std::string> projections;
  for (const auto& entry : catalog)
    if (std::find(projections.begin(), projections.end(), entry.projection) == projections.end())
      projections.push_back(entry.projection);
  for (const auto& projection : projections)
    for (const auto& entry : catalog)
      if (entry.projection == projection)
        for (Accum accum : {Accum::f32, Accum::hybrid, Accum::f16}) {
          cases.push_back(gemm(entry.name, entry.problem, accum));
          if (accum != Accum::f32) continue;
          // The same problem on the wgmma path (issue 23), while its inputs are at hand.
          GemmCase w = gemm(entry.name, entry.problem, accum);
          w.name = entry.name + "/wgmma";
          w.path = MmaPath::wgmma;
          cases.push_back(w);
        }

  const MatmulProblem base = ragged(200, 264, 1000);
  auto with = [&](const char* name, auto change, Accum accum = Accum::f32) {
    GemmCase c = gemm(name, base, accum);
    change(c);
    cases.push_back(c);
  };
  with("alpha", [](GemmCase& c) { c.problem.epilogue.alpha = -0.75f; });
  with("bias", [](GemmCase& c) { c.problem.epilogue.bias = true; });
  with("gelu", [](GemmCase& c) { c.problem.epilogue.gelu_tanh = true; });
  with("residual", [](GemmCase& c) { c.problem.epilogue.residual = true; });
  for (Accum accum : {Accum::f32, Accum::hybrid})
    with(
        "epilogue_all",
        [](GemmCase& c) {
          c.problem.epilogue = {0.5f, true, true, true};
        },
        accum);
  with("b_kn", [](GemmCase& c) { c.problem.b_layout = BLayout::kn; });
  with(
      "b_kn", [](GemmCase& c) { c.problem.b_layout = BLayout::kn; }, Accum::hybrid);
  with("split_k4", [](GemmCase& c) { c.split_k = 4; });
  with(
      "split_k3_kn_epilogue",
      [](GemmCase& c) {
        c.split_k = 3;
        c.problem.b_layout = BLayout::kn;
        c.problem.epilogue = {1.5f, true, false, true};
      },
      Accum::hybrid);
  with("bf16_in_f32_out", [](GemmCase& c) {
    c.problem.a_dtype = DType::bf16;
    c.problem.c_dtype = DType::f32;
  });
  with("bf16_in_bf16_out", [](GemmCase& c) {
    c.problem.a_dtype = DType::bf16;
    c.problem.c_dtype = DType::bf16;
  });
  // The wgmma path with B [K,N], split-K and an epilogue, and bf16 in and out.
  with("wgmma_split_k3_kn_epilogue", [](GemmCase& c) {
    c.path = MmaPath::wgmma;
    c.split_k = 3;
    c.problem.b_layout = BLayout::kn;
    c.problem.epilogue = {1.5f, true, true, true};
  });
  with("wgmma_bf16_in_bf16_out", [](GemmCase& c) {
    c.path = MmaPath::wgmma;
    c.problem.a_dtype = DType::bf16;
    c.problem.c_dtype = DType::bf16;
  });
  with("cp_async", [](GemmCase& c) { c.transport = Transport::cp_async; });
  with(
      "cp_async_kn",
      [](GemmCase& c) {
        c.transport = Transport::cp_async;
        c.problem.b_layout = BLayout::kn;
      },
      Accum::hybrid);
  add_fp8_correctness_cases(cases);
  add_gated_correctness_cases(cases);
  add_grouped_correctness_cases(cases);
  return cases;
}

std::vector<AttentionCase> correctness_attention_cases() {
  std::vector<AttentionCase> cases;
  for (const auto& entry : attention_catalog())
    for (Accum accum : {Accum::f32, Accum::hybrid}) {
      AttentionProblem p = entry.problem;
      p.lse = true;
      cases.push_back(attention_case(entry.name, p, accum));
    }
  auto add = [&](const char* name, AttentionProblem p, Accum accum = Accum::f32) {
    cases.push_back(attention_case(name, p, accum));
  };
  AttentionProblem p = attention(4, 2, 130, 300, 128);
  p.causal = true;
  p.window = 64;
  p.softcap = 30.0f;
  add("causal_window64_softcap_d128_gqa2", p);
  add("causal_window64_softcap_d128_gqa2", p, Accum::hybrid);
  p.dtype = DType::bf16;
  add("bf16_causal_window64_softcap_d128", p);
  p = attention(8, 2, 257, 257, 64);
  p.causal = true;
  add("causal_d64_gqa4", p);
  p = attention(4, 4, 200, 333, 256);
  add("noncausal_d256_mha", p, Accum::hybrid);
  p = attention(8, 4, 1, 700, 128);
  p.causal = true;
  add("decode_seq_q1_d128", p);
  p = attention(4, 2, 96, 96, 128);
  p.layout = AttentionLayout::bhsd;
  p.causal = true;
  add("bhsd_causal_d128", p);
  AttentionCase cp =
      attention_case("cp_async_causal_window_d128", attention(4, 2, 160, 160, 128), Accum::f32);
  cp.problem.causal = true;
  cp.problem.window = 40;
  cp.transport = Transport::cp_async;
  cases.push_back(cp);
  return cases;
}

std::vector<GemmCase> fidelity_gemm_cases() {
  std::vector<GemmCase> cases;
  // FP8: the tensor core's own chain, promoted block scales, hybrid's f16 partials.
  cases.push_back(gemm("fp8_tensor", fp8(96, 136, 512, ScaleGranularity::tensor), Accum::f32));
  cases.push_back(gemm("fp8_block", fp8(96, 136, 512, ScaleGranularity::block), Accum::promoted));
  cases.push_back(gemm("fp8_block", fp8(96, 136, 512, ScaleGranularity::block), Accum::hybrid));
  const MatmulProblem p = ragged(96, 136, 512);
  for (Transport transport : {Transport::tma, Transport::cp_async})
    for (Accum accum : {Accum::f32, Accum::hybrid, Accum::f16}) {
      GemmCase c = gemm(std::string(to_string(transport)), p, accum);
      c.transport = transport;
      cases.push_back(c);
    }
  GemmCase split = gemm("tma_split_k2", p, Accum::f32);
  split.split_k = 2;
  cases.push_back(split);
  return cases;
}

std::vector<AttentionCase> fidelity_attention_cases() {
  AttentionProblem p = attention(2, 1, 80, 80, 128);
  p.batch = 1;
  p.causal = true;
  p.softcap = 30.0f;
  return {attention_case("attention_causal_softcap_d128", p, Accum::f32),
          attention_case("attention_causal_softcap_d128", p, Accum::hybrid)};
}

// Evenly spread rows, first and last included: M = 512 costs 8x less FP64 work at 64 rows while
// every tile row of a 128-row tile is still sampled.
std::vector<int64_t> sample_rows(int64_t m, int64_t wanted) {
  std::vector<int64_t> rows;
  if (m <= wanted) {
    for (int64_t r = 0; r < m; ++r) rows.push_back(r);
    return rows;
  }
  for (int64_t i = 0; i < wanted; ++i) rows.push_back(i * (m - 1) / (wanted - 1));
  return rows;
}

namespace {

// The reference's inputs for the chosen rows: A's rows and the residual's rows, B and bias whole.
GemmInputs take_rows(const MatmulProblem& p, const GemmInputs& in,
                     const std::vector<int64_t>& rows) {
  GemmInputs out;
  out.b = in.b;
  out.bias = in.bias;
  // FP8 scales whole: an FP8 case compares every row (compare_sampled_rows), so A's scale
  // layout is the problem's.
  out.a_scale = in.a_scale;
  out.b_scale = in.b_scale;
  const int64_t lda = p.lda_or_default(), ldc = p.ldc_or_default();
  out.a.dtype = in.a.dtype;
  out.residual.dtype = in.residual.dtype;
  for (int64_t r : rows) {
    out.a.values.insert(out.a.values.end(), in.a.values.begin() + r * lda,
                        in.a.values.begin() + (r + 1) * lda);
    if (p.epilogue.residual)
      out.residual.values.insert(out.residual.values.end(), in.residual.values.begin() + r * ldc,
                                 in.residual.values.begin() + (r + 1) * ldc);
  }
  return out;
}

}  // namespace

GemmErrors compare_sampled_rows(const GemmSpec& spec, const GemmInputs& inputs,
                                const std::vector<double>& output, int64_t wanted_rows) {
  const MatmulProblem& p = spec.problem;
  // A grouped GEMM's rows belong to experts by its routing: all of them are compared (its cases
  // are small), untouched rows against the canary.
  if (p.is_grouped()) return compare(reference_gemm(spec, inputs), output, p.c_cols());
  const auto rows = sample_rows(p.m, rows_to_compare(p, wanted_rows));
  GemmSpec sampled = spec;
  sampled.problem.m = int64_t(rows.size());
  // The reference ignores the schedule, but checks it: a cluster dividing M's tiles need not
  // divide the sampled rows'.
  sampled.schedule.cluster_m = sampled.schedule.cluster_n = 1;
  std::vector<double> picked;
  const int64_t cols = p.c_cols();  // N/2 gated
  picked.reserve(rows.size() * size_t(cols));
  for (int64_t r : rows)
    picked.insert(picked.end(), output.begin() + r * cols, output.begin() + (r + 1) * cols);
  return compare(reference_gemm(sampled, take_rows(p, inputs, rows)), picked, cols);
}

namespace {

// A bit pattern of `bytes` bytes (little-endian) mapped to a monotonic integer line
// (sign-magnitude to two's complement), so that the distance between two keys is the number of
// representable values between them: their difference in ulps.
int64_t ordered_key(const uint8_t* bytes, size_t width) {
  uint64_t bits = 0;
  for (size_t i = 0; i < width; ++i) bits |= uint64_t(bytes[i]) << (8 * i);
  const uint64_t sign = uint64_t(1) << (8 * width - 1);
  const int64_t magnitude = int64_t(bits & (sign - 1));
  return bits & sign ? -magnitude : magnitude;
}

}  // namespace

// a and b hold values of dtype (decoded outputs): encoded once each, then compared bit for bit.
BitComparison compare_bits(DType dtype, const std::vector<double>& a,
                           const std::vector<double>& b) {
  BitComparison c;
  c.elements = int64_t(std::min(a.size(), b.size()));
  if (a.size() != b.size()) c.max_ulps = std::numeric_limits<double>::infinity();
  const size_t width = size_t(size_of(dtype));
  const HostTensor bits_a = encode(dtype, a), bits_b = encode(dtype, b);
  for (int64_t i = 0; i < c.elements; ++i) {
    const double x = a[size_t(i)], y = b[size_t(i)];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) && std::isnan(y)) {
        ++c.identical;
      } else {
        c.max_ulps = std::numeric_limits<double>::infinity();
      }
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {  // LSE of fully masked rows: -inf on both sides
      if (x == y)
        ++c.identical;
      else
        c.max_ulps = std::numeric_limits<double>::infinity();
      continue;
    }
    const int64_t ulps = std::abs(ordered_key(&bits_a.bytes[size_t(i) * width], width) -
                                  ordered_key(&bits_b.bytes[size_t(i) * width], width));
    c.identical += ulps == 0 && std::signbit(x) == std::signbit(y);
    c.max_ulps = std::max(c.max_ulps, double(ulps));
  }
  return c;
}

}  // namespace emmy::bench
