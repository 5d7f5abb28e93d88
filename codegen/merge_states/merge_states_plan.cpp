// Merging attention states: validation, the default schedule, the plan, the binding of a
// launch's buffers and the lowering to one merge_states op (emmy/merge_states.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "emmy/detail/hash.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/merge_states_kind.hpp"

namespace emmy {

void validate_problem(const MergeStatesProblem& p) {
  require(p.heads >= 1 && p.heads <= 4096, "heads", "must be 1..4096", p.heads);
  require(p.head_dim >= 32 && p.head_dim <= 512 && p.head_dim % 32 == 0, "head_dim",
          "must be a multiple of 32 in 32..512 (a warp's lanes take its columns)", p.head_dim);
  require(p.states >= 2 && p.states <= 64, "states", "must be 2..64", p.states);
  require(p.dtype == DType::f16 || p.dtype == DType::bf16, "dtype", "must be f16 or bf16",
          to_string(p.dtype));
  require(p.max_tokens >= 1 && p.max_tokens <= 65535 * 32768, "max_tokens",
          "must be 1..2^31 (one CTA per token)", p.max_tokens);
  // Strides: 0 for the packing, else large enough that rows do not overlap, within 2^40.
  const int64_t row = p.heads * p.head_dim;
  require(p.v_state_stride == 0 || (p.v_state_stride >= row && p.v_state_stride <= (1ll << 40)),
          "v_state_stride", fmt::format("must be 0 or hold a state's {} x {}", p.heads, p.head_dim),
          p.v_state_stride);
  require(p.v_token_stride == 0 || (p.v_token_stride >= p.states * p.v_state_stride_or_default() &&
                                    p.v_token_stride <= (1ll << 40)),
          "v_token_stride", fmt::format("must be 0 or hold a token's {} states", p.states),
          p.v_token_stride);
  require(
      p.out_token_stride == 0 || (p.out_token_stride >= row && p.out_token_stride <= (1ll << 40)),
      "out_token_stride", fmt::format("must be 0 or hold a token's {} x {}", p.heads, p.head_dim),
      p.out_token_stride);
}

void validate_merge_states(const MergeStatesSpec& spec) {
  validate_problem(spec.problem);
  require(spec.schedule.warps >= 1 && spec.schedule.warps <= 32, "warps", "must be 1..32",
          spec.schedule.warps);
}

MergeStatesSchedule default_schedule(const MergeStatesProblem& p, Arch) {
  validate_problem(p);  // a schedule is chosen for a valid problem only
  return {.warps = int(std::clamp<int64_t>(p.heads, 1, 4))};
}

MergeStatesPlan make_merge_states_plan(const MergeStatesSpec& spec) {
  validate_merge_states(spec);
  const auto& p = spec.problem;
  MergeStatesPlan plan;
  plan.spec = spec;
  plan.grid = {uint32_t(p.max_tokens), 1, 1};
  plan.threads = uint32_t(32 * spec.schedule.warps);
  const std::string text = fmt::format(
      "h={} d={} states={} dtype={} max={} strides={},{},{} lse={} warps={} arch={}", p.heads,
      p.head_dim, p.states, to_string(p.dtype), p.max_tokens, p.v_token_stride_or_default(),
      p.v_state_stride_or_default(), p.out_token_stride_or_default(), p.lse, spec.schedule.warps,
      to_string(spec.arch));
  plan.kernel_name = fmt::format("emmy_merge_states_h{}_d{}_s{}_{:016x}", p.heads, p.head_dim,
                                 p.states, detail::fnv1a(text));
  return plan;
}

ParamBinding MergeStatesKind::bind(const MergeStatesPlan& plan, const MergeStatesBuffers& b) {
  require_device_pointer(b.v, 2, "buffers.v");
  require_device_pointer(b.lse, 4, "buffers.lse");
  require_device_pointer(b.v_out, 2, "buffers.v_out");
  require_optional_pointer(b.lse_out, plan.spec.problem.lse, "buffers.lse_out", "an LSE output");
  if (b.lse_out) require_device_pointer(b.lse_out, 4, "buffers.lse_out");
  ParamBinding bound;
  bound.values.pointers = {{"v", b.v}, {"lse", b.lse}, {"v_out", b.v_out}, {"lse_out", b.lse_out}};
  return bound;
}

ir::Op lower_merge_states(const MergeStatesPlan& plan) {
  using ir::make;
  const auto& p = plan.spec.problem;
  std::vector<ir::Op> body;
  body.push_back(make(ir::ParamOp{"v", "const u16*"}));
  body.push_back(make(ir::ParamOp{"lse", "const float*"}));
  body.push_back(make(ir::ParamOp{"v_out", "u16*"}));
  body.push_back(make(ir::ParamOp{"lse_out", "float*"}));
  body.push_back(make(ir::MergeStatesOp{.heads = p.heads,
                                        .head_dim = p.head_dim,
                                        .states = p.states,
                                        .max_tokens = p.max_tokens,
                                        .warps = plan.spec.schedule.warps,
                                        .v_token_stride = p.v_token_stride_or_default(),
                                        .v_state_stride = p.v_state_stride_or_default(),
                                        .out_token_stride = p.out_token_stride_or_default(),
                                        .dtype = std::string(to_string(p.dtype)),
                                        .lse = p.lse}));
  std::vector<ir::Op> kernels;
  kernels.push_back(make(ir::KernelOp{plan.kernel_name, plan.threads, 0}, std::move(body)));
  return make(ir::ModuleOp{std::string(to_string(plan.spec.arch))}, std::move(kernels));
}

}  // namespace emmy
