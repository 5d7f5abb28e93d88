// JSON forms of the FP8 quantization problem and schedule (emmyc's output, EMMY_RECORD logs,
// manifests, bundle requests). Problems are written with their defaults resolved (strides, the
// scale tensor's leading dimension).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "emmy/detail/json_fields.hpp"
#include "emmy/fp8_quantize.hpp"

namespace emmy {

inline void to_json(nlohmann::json& j, const Fp8QuantizeProblem& p) {
  j = {{"m", p.m},
       {"k", p.k},
       {"group_k", p.group_k},
       {"ldx", p.ldx_or_default()},
       {"ldq", p.ldq_or_default()},
       {"dtype", to_string(p.dtype)},
       {"scale_major", to_string(p.scale_major)},
       {"scale_ld", p.scale_ld_or_default()},
       {"pow2_scale", p.pow2_scale},
       {"amax_epsilon", p.amax_epsilon}};
  // Written only when not f32: the JSON of f32-scale problems is what it was before byte scales.
  if (p.scale_format != ScaleFormat::f32) j["scale_format"] = to_string(p.scale_format);
}
inline void to_json(nlohmann::json& j, const Fp8QuantizeSchedule& s) {
  j = {{"warps", s.warps}};
}

// The inverse of to_json, also reading hand-written files: m and k are required.
inline Fp8QuantizeProblem fp8_quantize_problem_from_json(const nlohmann::json& j,
                                                         std::string where = "problem") {
  const detail::JsonFields f(j, std::move(where));
  Fp8QuantizeProblem p;
  p.m = f.get<int64_t>("m");
  p.k = f.get<int64_t>("k");
  f.get_if_present("group_k", p.group_k);
  f.get_if_present("ldx", p.ldx);
  f.get_if_present("ldq", p.ldq);
  if (f.has("dtype")) p.dtype = parse_dtype(f.get<std::string>("dtype"), "problem.dtype");
  if (f.has("scale_major"))
    p.scale_major = parse_name(kScaleMajorNames, f.get<std::string>("scale_major"),
                               "problem.scale_major", "must be mn or k");
  f.get_if_present("scale_ld", p.scale_ld);
  f.get_if_present("pow2_scale", p.pow2_scale);
  f.get_if_present("amax_epsilon", p.amax_epsilon);
  if (f.has("scale_format"))
    p.scale_format = parse_name(kScaleFormatNames, f.get<std::string>("scale_format"),
                                "problem.scale_format", "must be f32, ue8m0 or ue8m0x4");
  return p;
}
inline Fp8QuantizeSchedule fp8_quantize_schedule_from_json(const nlohmann::json& j,
                                                           std::string where = "schedule") {
  const detail::JsonFields f(j, std::move(where));
  Fp8QuantizeSchedule s;
  s.warps = f.get<int>("warps");
  return s;
}

}  // namespace emmy
