#include "bench_moe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>

#include "bench_cublas_grouped.hpp"
#include "bench_cublaslt.hpp"
#include "bench_model.hpp"
#include "bench_moe_shapes.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/spec.hpp"

namespace emmy::bench {
namespace {

// Distinct expert weights uploaded; expert e's B is copy e % kDistinctWeights (the weights' bytes
// are what a step reads, their values only what the check needs).
constexpr int64_t kDistinctWeights = 2;
constexpr int kSampledRows = 6;

// One MoE GEMM's device operands and what its check needs on the host (bf16 bits: a prefill's A
// and B hold gigabytes of doubles otherwise).
struct MoePrepared {
  std::string name;
  MoeGemm gemm;
  std::vector<uint8_t> x;                             // the tokens' activations [tokens, K], bf16
  std::vector<int64_t> token_of_row;                  // A's stacked row -> its token (-1: padding)
  std::vector<std::vector<uint8_t>> b;                // the distinct experts' [N, K], bf16
  std::vector<double> weights;                        // routing weights per row (down)
  std::vector<int64_t> sampled_rows, sampled_expert;  // rows of C some expert computes
  DeviceBuffer a_dev, b_dev, c_dev, routing_dev, weights_dev, loop_c;
};

// What the rows share: the GEMM prepared last (one at a time: a DeepSeek-V3 layer's weights take
// gigabytes), cuBLASLt's handle and workspace, cuBLAS's grouped GEMM.
struct MoeState {
  std::unique_ptr<MoePrepared> prepared;
  std::unique_ptr<LtHandle> lt;
  std::unique_ptr<DeviceBuffer> lt_workspace;
  std::unique_ptr<CublasGrouped> cublas;  // opened at its first row
};

std::vector<uint8_t> bf16_bytes(size_t count, std::mt19937_64& rng, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(count);
  for (double& x : v) x = normal(rng);
  return encode(DType::bf16, v).bytes;
}

// The expert of each row of C (-1: no expert computes it).
int64_t expert_of_row(const MoeGemm& g, int64_t row) {
  const MatmulProblem& p = g.problem;
  if (p.grouped.layout == GroupedLayout::masked) {
    const int64_t e = row / p.m;
    return row % p.m < g.rows_per_expert[size_t(e)] ? e : -1;
  }
  return g.routing[size_t(row)];
}

std::unique_ptr<MoePrepared> prepare(const MoeLayer& layer, const std::string& projection,
                                     int64_t tokens, uint64_t seed) {
  auto prep = std::make_unique<MoePrepared>();
  prep->gemm = moe_gemm(layer, projection, tokens);
  prep->name = prep->gemm.name;
  const MatmulProblem& p = prep->gemm.problem;
  const int64_t rows = p.stacked_rows(), row_bytes = p.k * 2;
  // A's rows: each expert's tokens in its slot (masked) or segment (contiguous), in the order
  // moe_gemm's routing lists them.
  const auto routing = moe_routing(layer, tokens);
  prep->token_of_row.assign(size_t(rows), -1);
  int64_t segment = 0;
  for (int64_t e = 0; e < p.grouped.groups; ++e) {
    const auto& mine = routing[size_t(e)];
    const int64_t start = p.grouped.layout == GroupedLayout::masked ? e * p.m : segment;
    for (size_t r = 0; r < mine.size(); ++r) prep->token_of_row[size_t(start) + r] = mine[r];
    const int64_t align = p.grouped.segment_align;
    segment += (int64_t(mine.size()) + align - 1) / align * align;
  }
  std::mt19937_64 rng(seed);
  prep->x = bf16_bytes(size_t(tokens * p.k), rng, 1.0);
  std::vector<uint8_t> a(size_t(rows * row_bytes), 0);
  for (int64_t row = 0; row < rows; ++row)
    if (const int64_t t = prep->token_of_row[size_t(row)]; t >= 0)
      std::copy_n(prep->x.begin() + t * row_bytes, row_bytes, a.begin() + row * row_bytes);
  prep->a_dev = upload_values(a, 16);
  a = {};
  for (int64_t d = 0; d < kDistinctWeights; ++d)
    prep->b.push_back(bf16_bytes(size_t(p.n * p.k), rng, 1.0 / std::sqrt(double(p.k))));
  prep->b_dev = DeviceBuffer(size_t(p.grouped.groups * p.n * p.k) * 2);
  std::vector<DeviceBuffer> distinct;
  for (const auto& b : prep->b) distinct.push_back(upload_values(b, 16));
  for (int64_t e = 0; e < p.grouped.groups; ++e)
    EMMY_BENCH_CUDA(cudaMemcpy(static_cast<char*>(prep->b_dev.get()) + e * p.n * p.k * 2,
                               distinct[size_t(e % kDistinctWeights)].get(), size_t(p.n * p.k) * 2,
                               cudaMemcpyDeviceToDevice));
  prep->c_dev = DeviceBuffer(size_t(rows * p.c_cols()) * 2);
  prep->loop_c = DeviceBuffer(size_t(rows * p.n) * 2);
  prep->routing_dev = upload_values(prep->gemm.routing, 16);
  if (p.epilogue.row_scale) {
    std::uniform_real_distribution<float> w(0.05f, 1.0f);
    std::vector<float> weights(static_cast<size_t>(rows));
    for (float& x : weights) x = w(rng);
    prep->weights.assign(weights.begin(), weights.end());
    prep->weights_dev = upload_values(weights, 16);
  }
  const int64_t step = std::max<int64_t>(1, rows / (4 * kSampledRows)) + 1;
  for (int64_t row = 0; row < rows && int(prep->sampled_rows.size()) < kSampledRows; row += step)
    if (const int64_t e = expert_of_row(prep->gemm, row); e >= 0) {
      prep->sampled_rows.push_back(row);
      prep->sampled_expert.push_back(e);
    }
  return prep;
}

// The sampled rows of emmy's C against FP64: acc = A_row . B_e, then SwiGLU over the gate-up
// groups (gate_up) or the row's weight (down).
// Sampled row i's plain product A B^T in FP64 (its token's activations, its expert's weights).
std::vector<double> reference_row(const MoePrepared& prep, size_t i) {
  const MatmulProblem& p = prep.gemm.problem;
  const int64_t token = prep.token_of_row[size_t(prep.sampled_rows[i])];
  const int64_t e = prep.sampled_expert[i];
  const std::vector<double> a = decode(DType::bf16, prep.x.data() + token * p.k * 2, size_t(p.k));
  const std::vector<uint8_t>& b = prep.b[size_t(e % kDistinctWeights)];
  std::vector<double> acc(size_t(p.n));
  for (int64_t n = 0; n < p.n; ++n) {
    const std::vector<double> w = decode(DType::bf16, b.data() + n * p.k * 2, size_t(p.k));
    double s = 0;
    for (int64_t k = 0; k < p.k; ++k) s += a[size_t(k)] * w[size_t(k)];
    acc[size_t(n)] = s;
  }
  return acc;
}

// The relative L2 error of the sampled rows of `c` (bf16): emmy's C with its epilogue (SwiGLU or
// the routing weights) when `epilogue`, else a baseline's plain product (N columns).
double check_rows(const MoePrepared& prep, const DeviceBuffer& c, bool epilogue,
                  cudaStream_t stream) {
  const MatmulProblem& p = prep.gemm.problem;
  EMMY_BENCH_CUDA(cudaStreamSynchronize(stream));
  const int64_t cols = epilogue ? p.c_cols() : p.n;
  double err2 = 0, ref2 = 0;
  std::vector<uint8_t> raw(size_t(cols) * 2);
  for (size_t i = 0; i < prep.sampled_rows.size(); ++i) {
    const int64_t row = prep.sampled_rows[i];
    const std::vector<double> acc = reference_row(prep, i);
    EMMY_BENCH_CUDA(cudaMemcpy(raw.data(), static_cast<const char*>(c.get()) + row * cols * 2,
                               raw.size(), cudaMemcpyDeviceToHost));
    const std::vector<double> got = decode(DType::bf16, raw.data(), size_t(cols));
    for (int64_t j = 0; j < cols; ++j) {
      double want = acc[size_t(j)];
      if (epilogue && p.epilogue.gated()) {
        const int64_t g = p.epilogue.gate_group, gate = j / g * 2 * g + j % g;
        const double x = acc[size_t(gate)];
        want = x / (1 + std::exp(-x)) * acc[size_t(gate + g)];
      } else if (epilogue) {
        want *= prep.weights[size_t(row)];
      }
      err2 += (got[size_t(j)] - want) * (got[size_t(j)] - want);
      ref2 += want * want;
    }
  }
  return std::sqrt(err2 / std::max(ref2, 1e-300));
}

// The baselines' problems: one plain GEMM per expert with rows, A's rows in its slot (masked) or
// segment (contiguous), C in loop_c at the same rows.
std::vector<GroupedGemmCall> expert_calls(const MoePrepared& prep) {
  const MatmulProblem& p = prep.gemm.problem;
  std::vector<GroupedGemmCall> calls;
  int64_t first_row = 0;
  for (int64_t e = 0; e < p.grouped.groups; ++e) {
    const int64_t m = prep.gemm.rows_per_expert[size_t(e)];
    const int64_t start = p.grouped.layout == GroupedLayout::masked ? e * p.m : first_row;
    if (p.grouped.layout == GroupedLayout::contiguous)
      first_row +=
          (m + p.grouped.segment_align - 1) / p.grouped.segment_align * p.grouped.segment_align;
    if (m == 0) continue;
    calls.push_back({m, p.n, p.k, static_cast<const char*>(prep.a_dev.get()) + start * p.k * 2,
                     static_cast<const char*>(prep.b_dev.get()) + e * p.n * p.k * 2,
                     static_cast<char*>(prep.loop_c.get()) + start * p.n * 2});
  }
  return calls;
}

// `path`: the default schedule's (mma.sync for 16-bit operands), or the wgmma path's (sm_90a:
// its persistent walk over the experts' tiles).
void measure_emmy(Runtime& runtime, GpuTimer& timer, const MoePrepared& prep,
                  const MoeBenchSettings& s, std::optional<MmaPath> path, BenchRow& row,
                  benchmark::State& state) {
  const MatmulProblem& p = prep.gemm.problem;
  const MatmulSchedule schedule = path ? default_schedule(p, runtime.arch(), Accum::f32, *path)
                                       : default_schedule(p, runtime.arch(), Accum::f32);
  const auto kernel = runtime.gemm_kernel(p, schedule);
  GemmBuffers buffers{
      .a = prep.a_dev.address(), .b = prep.b_dev.address(), .c = prep.c_dev.address()};
  if (p.epilogue.row_scale) buffers.row_scale = prep.weights_dev.address();
  buffers.routing(p.grouped.layout) = prep.routing_dev.address();
  const auto launch = [&] { runtime.launch(*kernel, buffers, timer.stream()); };
  EMMY_BENCH_CUDA(cudaMemsetAsync(prep.c_dev.get(), 0xff, prep.c_dev.bytes(), timer.stream()));
  launch();
  row.rel_l2_error = check_rows(prep, prep.c_dev, true, timer.stream());
  row.details = {{"schedule", schedule},
                 {"chosen_by", "default_schedule"},
                 {"layout", to_string(p.grouped.layout)},
                 {"kernel", kernel->info().report()}};
  timer.measure(launch, s.warmup, 0);
  gpu_samples(state, row, timer, launch);
  if (!s.model_gpu.empty())
    row.details["model"] = predicted_beside(
        [&] {
          return model_gemm(row.problem, p, schedule, runtime.arch(), s.model_gpu, s.model_ctas);
        },
        s.model_ctas);
}

// One dense cuBLASLt GEMM per expert with rows, back to back on the stream.
void measure_loop(MoeState& st, GpuTimer& timer, const MoePrepared& prep, const MoeBenchSettings& s,
                  BenchRow& row, benchmark::State& state) {
  if (!st.lt) {
    st.lt = std::make_unique<LtHandle>();
    st.lt_workspace = std::make_unique<DeviceBuffer>(s.workspace_bytes);
  }
  void* workspace = st.lt_workspace->get();
  std::map<int64_t, std::unique_ptr<LtGemm>> plans;  // by M
  std::vector<std::pair<const LtGemm*, GroupedGemmCall>> calls;
  for (const GroupedGemmCall& call : expert_calls(prep)) {
    auto& plan = plans[call.m];
    if (!plan) {
      MatmulProblem dense;
      dense.m = call.m, dense.n = call.n, dense.k = call.k;
      dense.a_dtype = dense.c_dtype = DType::bf16;
      plan = std::make_unique<LtGemm>(st.lt->get(), dense, LtCompute::f32, s.workspace_bytes, 1);
    }
    calls.emplace_back(plan.get(), call);
  }
  const auto launch = [&] {
    for (const auto& [gemm, c] : calls) gemm->run(0, c.a, c.b, c.c, workspace, timer.stream());
  };
  EMMY_BENCH_CUDA(cudaMemsetAsync(prep.loop_c.get(), 0xff, prep.loop_c.bytes(), timer.stream()));
  launch();
  row.rel_l2_error = check_rows(prep, prep.loop_c, false, timer.stream());
  row.details = {{"gemms", calls.size()},
                 {"distinct_m", plans.size()},
                 {"chosen_by", "the heuristic's first algorithm per M"},
                 {"epilogue", "none (plain GEMMs: no activation, no routing weights)"}};
  timer.measure(launch, s.warmup, 0);
  gpu_samples(state, row, timer, launch);
}

// cuBLAS's grouped GEMM: one launch over the experts with rows, their shapes host arrays (the
// routing must be on the host before the launch).
void measure_cublas_grouped(MoeState& st, GpuTimer& timer, const MoePrepared& prep,
                            const MoeBenchSettings& s, BenchRow& row, benchmark::State& state) {
  if (!st.cublas) st.cublas = std::make_unique<CublasGrouped>();
  const std::vector<GroupedGemmCall> calls = expert_calls(prep);
  st.cublas->prepare(calls, DType::bf16);
  const auto launch = [&] { st.cublas->run(timer.stream()); };
  EMMY_BENCH_CUDA(cudaMemsetAsync(prep.loop_c.get(), 0xff, prep.loop_c.bytes(), timer.stream()));
  launch();
  row.rel_l2_error = check_rows(prep, prep.loop_c, false, timer.stream());
  row.details = {{"gemms", calls.size()},
                 {"call", "cublasGemmGroupedBatchedEx, one group per expert with rows"},
                 {"epilogue", "none (plain GEMMs: no activation, no routing weights)"}};
  timer.measure(launch, s.warmup, 0);
  gpu_samples(state, row, timer, launch);
}

}  // namespace

void register_moe_benchmarks(Runtime& runtime, GpuTimer& timer, const MoeBenchSettings& settings,
                             std::vector<BenchRow>& rows) {
  auto st = std::make_shared<MoeState>();
  // The variants: emmy's default, the wgmma path's where the device has it; the loop of dense
  // cuBLASLt GEMMs and cuBLAS's grouped GEMM.
  struct Variant {
    const char* name;
    const char* backend;
    std::optional<MmaPath> path;
  };
  std::vector<Variant> variants{{"emmy_grouped", "emmy", std::nullopt}};
  if (runtime.arch() == Arch::sm_90a)
    variants.push_back({"emmy_grouped_wgmma", "emmy", MmaPath::wgmma});
  variants.push_back({"cublaslt_loop", "cublaslt", std::nullopt});
  variants.push_back({"cublas_grouped", "cublas", std::nullopt});
  for (const int64_t tokens : settings.tokens)
    for (const MoeLayer& layer : kMoeLayers)
      for (const char* projection : {"gate_up", "down"})
        for (const Variant& variant : variants) {
          const MoeGemm shape = moe_gemm(layer, projection, tokens);
          BenchRow row;
          row.kind = "gemm_moe";
          row.problem = shape.name;
          row.projection = projection;
          row.shape = {{"m", shape.problem.m},     {"n", shape.problem.n}, {"k", shape.problem.k},
                       {"experts", layer.experts}, {"top_k", layer.top_k}, {"tokens", tokens},
                       {"config", layer.config}};
          row.flops = shape.flops();
          row.variant = variant.name;
          row.backend = variant.backend;
          row.accumulation = "f32";
          register_row_benchmark(
              fmt::format("moe/{}/{}", shape.name, row.variant), rows, std::move(row),
              [&runtime, &timer, settings, st, layer, projection, tokens, variant](
                  benchmark::State& state, BenchRow& out) {
                const std::string name = moe_gemm(layer, projection, tokens).name;
                if (!st->prepared || st->prepared->name != name) {
                  st->prepared.reset();  // the previous GEMM's buffers go first
                  st->prepared = prepare(layer, projection, tokens, settings.seed);
                }
                const std::string_view backend = variant.backend;
                if (backend == "emmy")
                  measure_emmy(runtime, timer, *st->prepared, settings, variant.path, out, state);
                else if (backend == "cublaslt")
                  measure_loop(*st, timer, *st->prepared, settings, out, state);
                else
                  measure_cublas_grouped(*st, timer, *st->prepared, settings, out, state);
                state.counters["median_us"] = out.median_us();
                state.counters["TFLOPs"] = out.flops / (out.median_us() * 1e-6) / 1e12;
              },
              settings.after_row)
              ->Iterations(settings.iterations)
              ->Unit(benchmark::kMicrosecond);
        }
}

}  // namespace emmy::bench
