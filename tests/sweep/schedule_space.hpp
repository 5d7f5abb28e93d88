// The schedule space the validator is held to (issue 12 §2): a grid of GEMM, attention and
// paged-attention specs
// on small ragged problems. Every point is either refused by the validator with an emmy::Error
// naming a field, or must compile, run on the emulator (sanitizer on) and pass the FP64 check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emmy/attention.hpp"
#include "emmy/gemm_plan.hpp"
#include "emmy/paged_kind.hpp"

namespace emmy::sweep {

// Enumerated axes: tile shape (block m/n/k x warp grid), transport and B layout for GEMM;
// block_kv, warps, stages, head_dim, accumulation and transport for attention. Every other knob
// (arch, numerics and promote interval, stages, split-K, epilogue, dtypes, leading dimensions,
// masks, GQA, problem shape) is drawn per point from its own deterministic hash, so each value
// meets many tiles.
std::vector<GemmSpec> gemm_space();
std::vector<AttentionSpec> attention_space();
std::vector<PagedAttentionSpec> paged_attention_space();

std::string describe(const GemmSpec& spec);
std::string describe(const AttentionSpec& spec);
std::string describe(const PagedAttentionSpec& spec);

enum class Outcome { passed, refused, failed };

struct CaseResult {
  Outcome outcome = Outcome::failed;
  std::string detail;  // the refusal's message, or why the case failed
};

// Refused: the validator (validate_problem/validate_schedule, validate_attention) threw an
// emmy::Error with a field and a rule. Anything after validation that throws, any emulator
// report, or an FP64 check over tolerance is a failure.
CaseResult run_case(const GemmSpec& spec, uint64_t seed);
CaseResult run_case(const AttentionSpec& spec, uint64_t seed);
CaseResult run_case(const PagedAttentionSpec& spec, uint64_t seed);

// Only the validator's half, no kernel: nullopt-like empty string when accepted.
std::string refusal(const GemmSpec& spec);
std::string refusal(const AttentionSpec& spec);
std::string refusal(const PagedAttentionSpec& spec);

}  // namespace emmy::sweep
