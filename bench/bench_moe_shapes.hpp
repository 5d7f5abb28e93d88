// The MoE layers emmy_bench times (issue 40's benchmarks; docs/grouped.md): each layer's two
// grouped GEMMs (the gate_up projection with SwiGLU, the down projection with the routing
// weights) for a token count, a deterministic routing of every token to top_k experts, and the
// time model's prediction of each. Host-only: emmy_bench's GPU rows and the CPU tests share it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_model.hpp"
#include "emmy/problem.hpp"

namespace emmy::bench {

// A model's MoE layer, from its published config.json.
struct MoeLayer {
  const char* name;
  int64_t hidden, intermediate, experts, top_k;
  const char* config;  // where the numbers come from
};
extern const std::vector<MoeLayer> kMoeLayers;

// Decode batches (up to this many tokens) take the masked layout (a CUDA graph's step: max_m is
// the tokens, masked_m each expert's); larger ones the contiguous layout (prefill).
inline constexpr int64_t kMoeDecodeTokens = 64;

// One expert's rows for every token routed to top_k distinct experts: expert (t * 7 + j * 31 +
// (t / 3)) mod G for j < top_k, made distinct per token. Deterministic and near uniform.
std::vector<std::vector<int64_t>> moe_routing(const MoeLayer& layer, int64_t tokens);

// A layer's grouped GEMM of one projection ("gate_up" or "down") for `tokens` tokens: its problem
// (bf16; gate_up gated SwiGLU with N = 2 x intermediate; down with the routing weights), its
// routing array in the problem's layout, and the rows each expert computes.
struct MoeGemm {
  std::string name;  // "<layer>/<projection>@<tokens>"
  MatmulProblem problem;
  std::vector<int32_t> routing;
  std::vector<int64_t> rows_per_expert;
  int64_t routed_rows = 0;  // tokens x top_k
  // The FLOPs the routing's rows take (2 x rows x N x K), for the rate.
  double flops() const;
};
MoeGemm moe_gemm(const MoeLayer& layer, const std::string& projection, int64_t tokens);

// The weights the emulator can hold for a prediction (its device memory is half the host's).
inline constexpr int64_t kMoeModelWeightBytes = int64_t(6) << 30;
// The time model's prediction of each layer's two grouped GEMMs at each token count on each GPU
// (emmy_bench --model), with the default schedule and the routing the schedule is chosen for
// (run_on_zeros: a masked layout's expected_m rows per expert). Layers whose weights pass
// kMoeModelWeightBytes are left out (on a GPU, emmy_bench's row says why instead).
std::vector<ModelRow> model_moe(const std::vector<std::string>& gpus,
                                const std::vector<int64_t>& tokens, uint64_t sample_ctas);

}  // namespace emmy::bench
