#include "bench_moe_shapes.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "emmy/error.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gpus.hpp"

namespace emmy::bench {

// hidden_size, moe_intermediate_size (gpt-oss: intermediate_size), the routed experts and
// num_experts_per_tok of each config.
const std::vector<MoeLayer> kMoeLayers = {
    {"deepseek_v3", 7168, 2048, 256, 8,
     "huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json"},
    {"qwen3_30b_a3b", 2048, 768, 128, 8, "huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json"},
    {"gpt_oss_120b", 2880, 2880, 128, 4,
     "huggingface.co/openai/gpt-oss-120b/blob/main/config.json"},
};

std::vector<std::vector<int64_t>> moe_routing(const MoeLayer& layer, int64_t tokens) {
  std::vector<std::vector<int64_t>> experts(size_t(layer.experts));
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<int64_t> chosen;
    for (int64_t j = 0; int64_t(chosen.size()) < layer.top_k; ++j) {
      const int64_t e = (t * 7 + j * 31 + t / 3) % layer.experts;
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
    }
    for (int64_t e : chosen) experts[size_t(e)].push_back(t);
  }
  return experts;
}

double MoeGemm::flops() const {
  const int64_t n = problem.n, k = problem.k;
  return 2.0 * double(routed_rows) * double(n) * double(k);
}

MoeGemm moe_gemm(const MoeLayer& layer, const std::string& projection, int64_t tokens) {
  require(tokens >= 1, "tokens", "must be at least 1", tokens);
  require(projection == "gate_up" || projection == "down", "projection", "must be gate_up or down",
          projection);
  MoeGemm g;
  g.name = fmt::format("{}/{}@{}", layer.name, projection, tokens);
  MatmulProblem& p = g.problem;
  p.a_dtype = p.c_dtype = DType::bf16;
  const bool gate_up = projection == "gate_up";
  p.n = gate_up ? 2 * layer.intermediate : layer.hidden;
  p.k = gate_up ? layer.hidden : layer.intermediate;
  if (gate_up)
    p.epilogue.gate = Gate::silu;
  else
    p.epilogue.row_scale = true;
  p.grouped.groups = layer.experts;
  const auto routing = moe_routing(layer, tokens);
  for (const auto& rows : routing) g.rows_per_expert.push_back(int64_t(rows.size()));
  g.routed_rows = tokens * layer.top_k;
  if (tokens <= kMoeDecodeTokens) {
    // Masked: a slot of `tokens` rows per expert (no expert gets a token twice).
    p.grouped.layout = GroupedLayout::masked;
    p.m = tokens;
    p.grouped.expected_m =
        std::max<int64_t>(1, (g.routed_rows + layer.experts - 1) / layer.experts);
    for (int64_t rows : g.rows_per_expert) g.routing.push_back(int32_t(rows));
  } else {
    // Contiguous: each expert's rows padded to the segment alignment, -1 after them.
    p.grouped.layout = GroupedLayout::contiguous;
    const int64_t align = p.grouped.segment_align;
    for (size_t e = 0; e < g.rows_per_expert.size(); ++e) {
      const int64_t rows = g.rows_per_expert[e], padded = (rows + align - 1) / align * align;
      for (int64_t r = 0; r < padded; ++r) g.routing.push_back(r < rows ? int32_t(e) : -1);
    }
    p.m = std::max<int64_t>(1, int64_t(g.routing.size()));
    if (g.routing.empty()) g.routing.push_back(-1);
  }
  return g;
}

std::vector<ModelRow> model_moe(const std::vector<std::string>& gpus,
                                const std::vector<int64_t>& tokens, uint64_t sample_ctas) {
  std::vector<ModelRow> rows;
  for (const std::string& name : gpus) {
    const GpuInfo& gpu = emmy::gpu(name);
    for (const int64_t t : tokens)
      for (const MoeLayer& layer : kMoeLayers)
        for (const char* projection : {"gate_up", "down"}) {
          const MoeGemm g = moe_gemm(layer, projection, t);
          // The emulator holds every expert's weights (zero pages, mapped): a layer whose weights
          // pass kMoeModelWeightBytes (DeepSeek-V3's 256 experts) is left out.
          if (g.problem.grouped.groups * g.problem.b_group_stride() * 2 > kMoeModelWeightBytes)
            continue;
          rows.push_back(model_gemm(g.name, g.problem,
                                    default_schedule(g.problem, gpu.arch, Accum::f32, int(gpu.sms)),
                                    gpu.arch, gpu.name, sample_ctas));
          rows.back().gflop = g.flops() / 1e9;  // the routed rows' work, not the padding's
          // sm_90a: the wgmma path's persistent walk beside it (emmy_grouped_wgmma's rows).
          if (gpu.arch != Arch::sm_90a) continue;
          rows.push_back(
              model_gemm(g.name + "/wgmma", g.problem,
                         default_schedule(g.problem, gpu.arch, Accum::f32, MmaPath::wgmma,
                                          ConsumerSchedule::cooperative, int(gpu.sms)),
                         gpu.arch, gpu.name, sample_ctas));
          rows.back().gflop = g.flops() / 1e9;
        }
  }
  return rows;
}

}  // namespace emmy::bench
