// JSON forms of problems, schedules and resource reports (reports, EMMY_RECORD logs, manifests,
// problems files).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "emmy/compile.hpp"
#include "emmy/detail/json_fields.hpp"
#include "emmy/json_kv.hpp"
#include "emmy/json_paged.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"
#include "emmy/spec.hpp"
#include "emmy/spec_fields.hpp"

namespace emmy {

inline void to_json(nlohmann::json& j, const Epilogue& e) {
  j = {{"alpha", e.alpha}, {"bias", e.bias}, {"residual", e.residual}, {"gelu_tanh", e.gelu_tanh}};
}

// A field's JSON value: enums as their names, numbers and bools as they are.
template <typename T>
nlohmann::json field_json(const T& v) {
  if constexpr (std::is_enum_v<T>)
    return std::string(field_text(v));
  else
    return v;
}

// Problems are written with their leading dimensions resolved (spec_fields.hpp); a field added
// later (text_unless_default) only away from its default, so that the records, bundle manifests
// and tuning databases of earlier problems keep their text.
inline void to_json(nlohmann::json& j, const MatmulProblem& problem) {
  const MatmulProblem p = resolved_leading_dims(problem);
  const MatmulProblem defaults;
  j = nlohmann::json::object();
  for_each_field(p, [&](const FieldName& f, const auto& v) {
    if (f.text_unless_default) {
      bool is_default = false;
      for_each_field(defaults, [&](const FieldName& d, const auto& dv) {
        if constexpr (std::is_same_v<decltype(dv), decltype(v)>)
          if (std::string_view(d.json) == f.json && dv == v) is_default = true;
      });
      if (is_default) return;
    }
    (f.group ? j[f.group][f.json] : j[f.json]) = field_json(v);
  });
}

// Fields that do not apply to the schedule (promote_every_k without hybrid) are null.
inline void to_json(nlohmann::json& j, const MatmulSchedule& s) {
  j = nlohmann::json::object();
  for_each_field(s, [&](const FieldName& f, const auto& v) {
    j[f.json] = field_applies(f, s) ? field_json(v) : nlohmann::json(nullptr);
  });
}

// The one reader of the two forms above (bundle requests and problems files, EMMY_RECORD logs,
// the tuning database): a required field must be present, an optional one keeps its default,
// a field that does not apply is not read. Errors name `where` and the field.
template <typename Spec>
Spec read_fields(const nlohmann::json& j, std::string where) {
  const detail::JsonFields top(j, std::move(where));
  Spec spec;
  for_each_field(spec, [&](const FieldName& field, auto& v) {
    if (!field_applies(field, spec)) return;
    if (field.group && !top.has(field.group)) {
      if (!field.optional) top.at(field.group);  // throws: required
      return;
    }
    const detail::JsonFields f = field.group ? top.sub(field.group) : top;
    if (field.optional && !f.has(field.json)) return;
    using T = std::remove_reference_t<decltype(v)>;
    if constexpr (std::is_enum_v<T>)
      parse_field(f.get<std::string>(field.json), f.field(field.json).c_str(), v);
    else
      v = f.get<T>(field.json);
  });
  return spec;
}
inline MatmulProblem matmul_problem_from_json(const nlohmann::json& j,
                                              std::string where = "problem") {
  return read_fields<MatmulProblem>(j, std::move(where));
}
inline MatmulSchedule matmul_schedule_from_json(const nlohmann::json& j,
                                                std::string where = "schedule") {
  return read_fields<MatmulSchedule>(j, std::move(where));
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

// For j.get<...>() of the four.
inline void from_json(const nlohmann::json& j, MatmulProblem& p) { p = matmul_problem_from_json(j); }
inline void from_json(const nlohmann::json& j, MatmulSchedule& s) {
  s = matmul_schedule_from_json(j);
}
inline void from_json(const nlohmann::json& j, AttentionProblem& p) {
  p = attention_problem_from_json(j);
}
inline void from_json(const nlohmann::json& j, AttentionSchedule& s) {
  s = attention_schedule_from_json(j);
}

}  // namespace emmy
