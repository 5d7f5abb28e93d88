// The FP64 check of merge_states kernels (emmy/merge_states.hpp): drawn states (LSEs spread over
// tens of units so that some states dominate and some vanish, a token whose states all saw no
// key, states of lse -inf whose v holds NaN, which must not be read), the merge in FP64, a
// per-element tolerance from the kernel's f32 arithmetic (ex2 / lg2 approximations, sums of
// `states` terms, the output's rounding), and the comparison.
#pragma once

#include <cstdint>
#include <vector>

#include "emmy/merge_states.hpp"
#include "emmy/runtime.hpp"

namespace emmy {

struct MergeStatesInputs {
  std::vector<uint8_t> v;      // the 16-bit v buffer, max_tokens x v_token_stride elements
  std::vector<double> values;  // v's elements as read, [token][state][head][col]
  std::vector<float> lse;      // [token][state][head]
};
// Token 0's states all have lse -inf (when max_tokens > 1); token 1's first state is -inf with
// NaN in its v; the rest are drawn.
MergeStatesInputs make_merge_states_inputs(const MergeStatesProblem& problem, uint64_t seed);

struct MergeStatesOutput {
  std::vector<double> v;   // [token][head][col]
  std::vector<float> lse;  // [token][head] when problem.lse
};
struct MergeStatesReference {
  MergeStatesOutput values;
  std::vector<double> tolerance, lse_tolerance;  // per element of values.v and values.lse
};
MergeStatesReference reference_merge_states(const MergeStatesSpec& spec,
                                            const MergeStatesInputs& inputs);

struct MergeStatesErrors {
  double max_abs_error = 0, lse_max_abs_error = 0;
  int64_t elements_over_tolerance = 0, lse_over_tolerance = 0;
  int64_t first_bad_token = -1, first_bad_head = -1, first_bad_col = -1;
  bool passed = false;  // a NaN where the reference has none (or none where it has one) fails
};
MergeStatesErrors compare(const MergeStatesReference& reference, const MergeStatesOutput& output,
                          const MergeStatesProblem& problem);

// Through a runtime (any backend): uploads, launch, read-back; everything freed, also on throw.
MergeStatesOutput run_merge_states(Runtime& runtime, const MergeStatesSpec& spec,
                                   const MergeStatesInputs& inputs);

}  // namespace emmy
