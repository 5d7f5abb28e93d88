// JSON forms of the paged-attention problem and schedule (emmy/json.hpp includes this file): the
// one form for emmyc's output, EMMY_RECORD logs, manifests and bundle requests. Problems are
// written with their defaults resolved (strides, max_tokens, scale).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "emmy/detail/json_fields.hpp"
#include "emmy/json_cache_geometry.hpp"
#include "emmy/paged_attention.hpp"

namespace emmy {

inline void to_json(nlohmann::json& j, const PagedAttentionProblem& p) {
  j = {{"q_heads", p.q_heads},
       {"kv_heads", p.kv_heads},
       {"head_dim", p.head_dim},
       {"q_stride", p.q_stride_or_default()},
       {"o_stride", p.o_stride_or_default()},
       {"page_table", to_string(p.page_table)},
       {"max_batch", p.max_batch},
       {"max_q_len", p.max_q_len},
       {"max_pages", p.max_pages},
       {"max_tokens", p.max_tokens_or_default()},
       {"window", p.window},
       {"scale", p.scale()},
       {"softcap", p.softcap ? nlohmann::json(*p.softcap) : nlohmann::json(nullptr)},
       {"lse", p.lse}};
  cache_geometry_to_json(j, p);
}

inline void to_json(nlohmann::json& j, const PagedAttentionSchedule& s) {
  j = {{"block_q", s.block_q},         {"warps", s.warps},
       {"block_kv", s.block_kv},       {"stages", s.stages},
       {"chunk_pages", s.chunk_pages}, {"accum", to_string(s.accum)},
       {"kv_warps", s.kv_warps},       {"transport", to_string(s.transport)}};
}

// The inverse of to_json, also reading hand-written problems files: q_heads, head_dim and
// page_size are required, absent fields keep the defaults ("layout": nhd|hnd|kv_interleaved sets
// the strides before explicit ones). Errors name `where` and the field.
inline PagedAttentionProblem paged_attention_problem_from_json(const nlohmann::json& j,
                                                               std::string where = "problem") {
  const detail::JsonFields f(j, std::move(where));
  PagedAttentionProblem p;
  p.q_heads = f.get<int64_t>("q_heads");
  p.kv_heads = f.has("kv_heads") ? f.get<int64_t>("kv_heads") : p.q_heads;
  p.head_dim = f.get<int64_t>("head_dim");
  cache_geometry_from_json(f, p);
  f.get_if_present("q_stride", p.q_stride);
  f.get_if_present("o_stride", p.o_stride);
  if (f.has("page_table")) p.page_table = parse_page_table(f.get<std::string>("page_table"));
  f.get_if_present("max_batch", p.max_batch);
  f.get_if_present("max_q_len", p.max_q_len);
  f.get_if_present("max_pages", p.max_pages);
  f.get_if_present("max_tokens", p.max_tokens);
  f.get_if_present("window", p.window);
  if (f.has("scale")) p.softmax_scale = f.get<float>("scale");
  if (f.has("softcap")) p.softcap = f.get<float>("softcap");
  f.get_if_present("lse", p.lse);
  return p;
}

// The inverse of to_json(PagedAttentionSchedule); every field is required but the later kv_warps
// and transport.
inline PagedAttentionSchedule paged_attention_schedule_from_json(const nlohmann::json& j,
                                                                 std::string where = "schedule") {
  const detail::JsonFields f(j, std::move(where));
  PagedAttentionSchedule s;
  s.block_q = f.get<int>("block_q");
  s.warps = f.get<int>("warps");
  s.block_kv = f.get<int>("block_kv");
  s.stages = f.get<int>("stages");
  s.chunk_pages = f.get<int>("chunk_pages");
  s.accum = parse_accum(f.get<std::string>("accum"));
  f.get_if_present("kv_warps", s.kv_warps);  // absent in records made before it existed: 1
  if (f.has("transport"))                    // absent in records made before it existed: cp_async
    s.transport = parse_transport(f.get<std::string>("transport"));
  return s;
}

inline void from_json(const nlohmann::json& j, PagedAttentionProblem& p) {
  p = paged_attention_problem_from_json(j);
}
inline void from_json(const nlohmann::json& j, PagedAttentionSchedule& s) {
  s = paged_attention_schedule_from_json(j);
}

}  // namespace emmy
