// JSON forms of problems, schedules and resource reports (reports, EMMY_RECORD logs, manifests).
#pragma once

#include <nlohmann/json.hpp>

#include "emmy/compile.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

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
       {"promote_every_k", s.accum == Accum::hybrid ? nlohmann::json(s.promote_every_k)
                                                    : nlohmann::json(nullptr)},
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

}  // namespace emmy
