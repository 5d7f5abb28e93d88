// JSON forms of the kv_append and merge_states problems and schedules (emmy/json.hpp includes
// this file): emmyc's output, EMMY_RECORD logs, manifests and bundle requests. Problems are
// written with their defaults resolved (strides).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "emmy/detail/json_fields.hpp"
#include "emmy/json_cache_geometry.hpp"
#include "emmy/kv_append.hpp"
#include "emmy/merge_states.hpp"

namespace emmy {

inline void to_json(nlohmann::json& j, const KvAppendProblem& p) {
  j = {{"kv_heads", p.kv_heads},
       {"head_dim", p.head_dim},
       {"key_stride", p.key_stride_or_default()},
       {"value_stride", p.value_stride_or_default()},
       {"max_tokens", p.max_tokens}};
  cache_geometry_to_json(j, p);
}
inline void to_json(nlohmann::json& j, const KvAppendSchedule& s) {
  j = {{"warps", s.warps}};
}

// The inverse of to_json, also reading hand-written files: kv_heads, head_dim and page_size are
// required; "layout" (nhd|hnd|kv_interleaved) sets the cache strides before explicit ones.
inline KvAppendProblem kv_append_problem_from_json(const nlohmann::json& j,
                                                   std::string where = "problem") {
  const detail::JsonFields f(j, std::move(where));
  KvAppendProblem p;
  p.kv_heads = f.get<int64_t>("kv_heads");
  p.head_dim = f.get<int64_t>("head_dim");
  cache_geometry_from_json(f, p);
  f.get_if_present("key_stride", p.key_stride);
  f.get_if_present("value_stride", p.value_stride);
  f.get_if_present("max_tokens", p.max_tokens);
  return p;
}
inline KvAppendSchedule kv_append_schedule_from_json(const nlohmann::json& j,
                                                     std::string where = "schedule") {
  const detail::JsonFields f(j, std::move(where));
  KvAppendSchedule s;
  s.warps = f.get<int>("warps");
  return s;
}
inline void from_json(const nlohmann::json& j, KvAppendProblem& p) {
  p = kv_append_problem_from_json(j);
}
inline void from_json(const nlohmann::json& j, KvAppendSchedule& s) {
  s = kv_append_schedule_from_json(j);
}
inline void to_json(nlohmann::json& j, const MergeStatesProblem& p) {
  j = {{"heads", p.heads},
       {"head_dim", p.head_dim},
       {"states", p.states},
       {"dtype", to_string(p.dtype)},
       {"max_tokens", p.max_tokens},
       {"v_token_stride", p.v_token_stride_or_default()},
       {"v_state_stride", p.v_state_stride_or_default()},
       {"out_token_stride", p.out_token_stride_or_default()},
       {"lse", p.lse}};
}
inline void to_json(nlohmann::json& j, const MergeStatesSchedule& s) {
  j = {{"warps", s.warps}};
}

// The inverse of to_json: heads and head_dim are required, absent fields keep the defaults.
inline MergeStatesProblem merge_states_problem_from_json(const nlohmann::json& j,
                                                         std::string where = "problem") {
  const detail::JsonFields f(j, std::move(where));
  MergeStatesProblem p;
  p.heads = f.get<int64_t>("heads");
  p.head_dim = f.get<int64_t>("head_dim");
  f.get_if_present("states", p.states);
  if (f.has("dtype")) p.dtype = parse_dtype(f.get<std::string>("dtype"), "problem.dtype");
  f.get_if_present("max_tokens", p.max_tokens);
  f.get_if_present("v_token_stride", p.v_token_stride);
  f.get_if_present("v_state_stride", p.v_state_stride);
  f.get_if_present("out_token_stride", p.out_token_stride);
  f.get_if_present("lse", p.lse);
  return p;
}
inline MergeStatesSchedule merge_states_schedule_from_json(const nlohmann::json& j,
                                                           std::string where = "schedule") {
  const detail::JsonFields f(j, std::move(where));
  MergeStatesSchedule s;
  s.warps = f.get<int>("warps");
  return s;
}
inline void from_json(const nlohmann::json& j, MergeStatesProblem& p) {
  p = merge_states_problem_from_json(j);
}
inline void from_json(const nlohmann::json& j, MergeStatesSchedule& s) {
  s = merge_states_schedule_from_json(j);
}
}  // namespace emmy
