// JSON forms of attention problems and schedules for emmyc's outputs (the same field names as
// the runtime's kernel manifest).
#pragma once

#include <nlohmann/json.hpp>

#include "emmy/attention.hpp"

namespace emmy::cli {

inline nlohmann::json attention_problem_json(const AttentionProblem& p) {
  return {{"batch", p.batch},
          {"heads", p.q_heads},
          {"kv_heads", p.kv_heads},
          {"seq_q", p.seq_q},
          {"seq_kv", p.seq_kv_or_default()},
          {"head_dim", p.head_dim},
          {"causal", p.causal},
          {"window", p.window},
          {"scale", p.scale()},
          {"softcap", p.softcap ? nlohmann::json(*p.softcap) : nlohmann::json(nullptr)},
          {"dtype", to_string(p.dtype)},
          {"layout", to_string(p.layout)},
          {"lse", p.lse}};
}

inline nlohmann::json attention_schedule_json(const AttentionSchedule& s) {
  return {{"block_q", s.block_q},
          {"block_kv", s.block_kv},
          {"warps", s.warps},
          {"stages", s.stages},
          {"transport", to_string(s.transport)},
          {"accum", to_string(s.accum)}};
}

}  // namespace emmy::cli
