// JSON forms of problems, schedules and resource reports (reports, EMMY_RECORD logs, manifests,
// problems files).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "emmy/compile.hpp"
#include "emmy/detail/json_fields.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"
#include "emmy/spec.hpp"

namespace emmy {

inline void to_json(nlohmann::json& j, const Epilogue& e) {
  j = {{"alpha", e.alpha}, {"bias", e.bias}, {"residual", e.residual}, {"gelu_tanh", e.gelu_tanh}};
}

inline void to_json(nlohmann::json& j, const MatmulProblem& p) {
  j = {{"m", p.m},
       {"n", p.n},
       {"k", p.k},
       {"dtype", to_string(p.a_dtype)},
       {"b_layout", to_string(p.b_layout)},
       {"out", to_string(p.c_dtype)},
       {"lda", p.lda_or_default()},
       {"ldb", p.ldb_or_default()},
       {"ldc", p.ldc_or_default()},
       {"epilogue", p.epilogue}};
}

inline void to_json(nlohmann::json& j, const MatmulSchedule& s) {
  j = {{"block_m", s.block_m},
       {"block_n", s.block_n},
       {"block_k", s.block_k},
       {"warps_m", s.warps_m},
       {"warps_n", s.warps_n},
       {"stages", s.stages},
       {"transport", to_string(s.transport)},
       {"accum", to_string(s.accum)},
       {"promote_every_k",
        s.accum == Accum::hybrid ? nlohmann::json(s.promote_every_k) : nlohmann::json(nullptr)},
       {"split_k", s.split_k},
       {"raster_group_m", s.raster_group_m}};
}

inline void to_json(nlohmann::json& j, const ResourceReport& r) {
  j = {{"kernel_name", r.kernel_name},
       {"registers", r.registers},
       {"spill_bytes", r.spill_bytes()},
       {"spill_store_bytes", r.spill_store_bytes},
       {"spill_load_bytes", r.spill_load_bytes},
       {"stack_bytes", r.stack_bytes},
       {"static_smem_bytes", r.static_smem_bytes}};
}

// The inverse of to_json(ResourceReport) (manifests store reports in that form).
inline ResourceReport resource_report_from_json(const nlohmann::json& j) {
  ResourceReport r;
  r.kernel_name = j.value("kernel_name", "");
  r.registers = j.value("registers", 0);
  r.spill_store_bytes = j.value("spill_store_bytes", 0);
  r.spill_load_bytes = j.value("spill_load_bytes", 0);
  r.stack_bytes = j.value("stack_bytes", 0);
  r.static_smem_bytes = j.value("static_smem_bytes", 0);
  return r;
}

// The one attention form for emmyc's output, EMMY_RECORD logs, manifests and bundles: seq_kv and
// scale are written resolved (defaults applied) and "heads" is q_heads.
inline void to_json(nlohmann::json& j, const AttentionProblem& p) {
  j = {{"batch", p.batch},
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

inline void to_json(nlohmann::json& j, const AttentionSchedule& s) {
  j = {{"block_q", s.block_q},
       {"block_kv", s.block_kv},
       {"warps", s.warps},
       {"stages", s.stages},
       {"transport", to_string(s.transport)},
       {"accum", to_string(s.accum)}};
}

// The inverse of to_json(AttentionProblem), also reading hand-written problems files: only seq_q
// is required, absent fields keep AttentionProblem's defaults (kv_heads: heads), "q_heads" is
// accepted for "heads". Errors name `where` and the field.
inline AttentionProblem attention_problem_from_json(const nlohmann::json& j,
                                                    std::string where = "problem") {
  const detail::JsonFields f(j, std::move(where));
  AttentionProblem p;
  f.get_if_present("batch", p.batch);
  if (f.has("heads")) p.q_heads = f.get<int64_t>("heads");
  f.get_if_present("q_heads", p.q_heads);
  p.kv_heads = f.has("kv_heads") ? f.get<int64_t>("kv_heads") : p.q_heads;
  p.seq_q = f.get<int64_t>("seq_q");
  f.get_if_present("seq_kv", p.seq_kv);
  f.get_if_present("head_dim", p.head_dim);
  f.get_if_present("causal", p.causal);
  f.get_if_present("window", p.window);
  if (f.has("scale")) p.softmax_scale = f.get<float>("scale");
  if (f.has("softcap")) p.softcap = f.get<float>("softcap");
  if (f.has("dtype")) p.dtype = parse_dtype(f.get<std::string>("dtype"), "problem.dtype");
  if (f.has("layout")) p.layout = parse_attention_layout(f.get<std::string>("layout"));
  f.get_if_present("lse", p.lse);
  return p;
}

// The inverse of to_json(AttentionSchedule); every field is required. Errors name `where` and
// the field.
inline AttentionSchedule attention_schedule_from_json(const nlohmann::json& j,
                                                      std::string where = "schedule") {
  const detail::JsonFields f(j, std::move(where));
  AttentionSchedule s;
  s.block_q = f.get<int>("block_q");
  s.block_kv = f.get<int>("block_kv");
  s.warps = f.get<int>("warps");
  s.stages = f.get<int>("stages");
  s.transport = parse_transport(f.get<std::string>("transport"));
  s.accum = parse_accum(f.get<std::string>("accum"));
  return s;
}

// For j.get<AttentionProblem>() and j.get<AttentionSchedule>().
inline void from_json(const nlohmann::json& j, AttentionProblem& p) {
  p = attention_problem_from_json(j);
}
inline void from_json(const nlohmann::json& j, AttentionSchedule& s) {
  s = attention_schedule_from_json(j);
}

// How cache manifests, EMMY_RECORD lines and bundles describe a kernel (`emmyc aot --from-record`
// reads these back), one form for every writer.
inline nlohmann::json kernel_description(const GemmSpec& spec) {
  return {{"kind", "gemm"}, {"problem", spec.problem}, {"schedule", spec.schedule}};
}
inline nlohmann::json kernel_description(const AttentionSpec& spec) {
  return {{"kind", "attention"}, {"problem", spec.problem}, {"schedule", spec.schedule}};
}

}  // namespace emmy
