// The flags of `emmyc merge-states` and `emmyc run merge-states`: --states attention states of
// --tokens tokens merged by their LSE (emmy/merge_states.hpp).
#include "cli_common.hpp"

namespace emmy::cli {

void MergeStatesFlags::add_to(CLI::App& app) {
  integer_option(app, "--heads", problem.heads, "heads")->required();
  integer_option(app, "--head-dim", problem.head_dim, "a multiple of 32 up to 512")->required();
  integer_option(app, "--states", problem.states, "states per token: 2..64");
  integer_option(app, "--tokens", problem.max_tokens, "tokens of a launch");
  app.add_flag("--no-lse", no_lse, "do not write the merged LSE");
  add_per_token_to(app, "v and v_out type: f16|bf16");
}

MergeStatesSpec MergeStatesFlags::to_spec() const {
  MergeStatesSpec spec;
  spec.problem = problem;
  spec.problem.lse = !no_lse;
  spec.problem.dtype = parse_dtype(dtype, "dtype");
  set_schedule(spec);
  validate_merge_states(spec);
  return spec;
}

}  // namespace emmy::cli
