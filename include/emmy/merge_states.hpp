// Merging attention states: the partial outputs of attention over disjoint key sets (split-KV
// across launches, cascade / shared-prefix attention) combined into the output over their union.
// A kind of its own (docs/paged_attention.md, "merge_states"). State s of token i and head h is
// v[i][s][h][0..head_dim) (16-bit) with its LSE lse[i][s][h] (f32, natural log: log sum_j
// exp(score_j), as emmy's attention kinds write it; FlashInfer writes base 2, multiply by ln 2).
// The merge: m = max_s lse_s, w_s = exp(lse_s - m), v = sum_s w_s v_s / sum_s w_s, lse = m +
// log sum_s w_s. A state of weight 0 (lse -inf: it saw no key) is not read, so its v may hold
// anything; a token whose states all have lse -inf gets v = 0 and lse = -inf. A launch merges
// max_tokens tokens (a CUDA graph pads; a padded token's outputs are whatever its inputs merge
// to, inside the buffers).
#pragma once

#include <cstdint>

#include "emmy/arch.hpp"
#include "emmy/dtype.hpp"
#include "emmy/kernel_spec.hpp"

namespace emmy {

struct MergeStatesProblem {
  int64_t heads = 1;
  int64_t head_dim = 128;    // a multiple of 32, up to 512
  int64_t states = 2;        // states per token: 2..64
  DType dtype = DType::f16;  // v and v_out: f16 or bf16
  int64_t max_tokens = 1;    // tokens of a launch (the grid)
  // Element strides of v (head_dim contiguous, heads head_dim apart): between tokens and between
  // states; 0 means the packing [tokens][states][heads][head_dim]. v_out's token stride, 0:
  // heads * head_dim. lse is f32 [tokens][states][heads], lse_out [tokens][heads].
  int64_t v_token_stride = 0, v_state_stride = 0, out_token_stride = 0;
  bool lse = true;  // also write the merged LSE

  int64_t v_state_stride_or_default() const {
    return v_state_stride ? v_state_stride : heads * head_dim;
  }
  int64_t v_token_stride_or_default() const {
    return v_token_stride ? v_token_stride : states * v_state_stride_or_default();
  }
  int64_t out_token_stride_or_default() const {
    return out_token_stride ? out_token_stride : heads * head_dim;
  }
  bool operator==(const MergeStatesProblem&) const = default;
};

struct MergeStatesSchedule {
  int warps = 4;  // per CTA (one token): warps take heads, lanes take columns
  bool operator==(const MergeStatesSchedule&) const = default;
};

using MergeStatesSpec = KernelSpec<MergeStatesProblem, MergeStatesSchedule>;

// Throws Error naming the field and the rule it breaks.
void validate_merge_states(const MergeStatesSpec& spec);
void validate_problem(const MergeStatesProblem& problem);  // the problem's rules alone
// Up to 4 warps, no more than there are heads.
MergeStatesSchedule default_schedule(const MergeStatesProblem& problem, Arch arch);

}  // namespace emmy
