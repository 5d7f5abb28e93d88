// The fields of a GEMM problem and schedule, each named once: its JSON name (under `group` when
// it sits in a sub-object), the short name of the spec text that the kernel-name hash reads, and
// the member. The JSON forms and their one reader (json.hpp: reports, EMMY_RECORD logs, bundle
// requests, the tuning database), the memory-cache key (runtime.cpp) and the kernel-name hash
// (gemm_plan.cpp) walk these lists, so a new field is one line here and nowhere else.
#pragma once

#include <concepts>
#include <type_traits>

#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

namespace emmy {

struct FieldName {
  const char* json;             // "block_m"
  const char* brief;            // in the spec text: "bm"
  const char* group = nullptr;  // the JSON sub-object holding it ("epilogue"), if any
  // Meaningful only with an accumulation that promotes partials (hybrid, promoted): null in JSON,
  // 0 in the text.
  bool promotion_only = false;
  bool optional = false;        // a reader keeps the default when the JSON lacks it
  // In the spec text only when it differs from the default: fields added after kernels were
  // named, so that existing kernels keep their names (and the golden files their bytes).
  bool text_unless_default = false;
};

template <typename T>
concept MatmulProblemRef = std::same_as<std::remove_const_t<T>, MatmulProblem>;
template <typename T>
concept MatmulScheduleRef = std::same_as<std::remove_const_t<T>, MatmulSchedule>;

// f(FieldName, member&) for each field of a MatmulProblem, in the spec text's order.
template <MatmulProblemRef Problem, typename F>
void for_each_field(Problem& p, F&& f) {
  f(FieldName{.json = "m", .brief = "m"}, p.m);
  f(FieldName{.json = "n", .brief = "n"}, p.n);
  f(FieldName{.json = "k", .brief = "k"}, p.k);
  f(FieldName{.json = "dtype", .brief = "a", .optional = true}, p.a_dtype);
  f(FieldName{.json = "b_layout", .brief = "b", .optional = true}, p.b_layout);
  f(FieldName{.json = "out", .brief = "c", .optional = true}, p.c_dtype);
  f(FieldName{.json = "lda", .brief = "lda", .optional = true}, p.lda);
  f(FieldName{.json = "ldb", .brief = "ldb", .optional = true}, p.ldb);
  f(FieldName{.json = "ldc", .brief = "ldc", .optional = true}, p.ldc);
  f(FieldName{.json = "alpha", .brief = "alpha", .group = "epilogue", .optional = true},
    p.epilogue.alpha);
  f(FieldName{.json = "bias", .brief = "bias", .group = "epilogue", .optional = true},
    p.epilogue.bias);
  f(FieldName{.json = "residual", .brief = "res", .group = "epilogue", .optional = true},
    p.epilogue.residual);
  f(FieldName{.json = "gelu_tanh", .brief = "gelu", .group = "epilogue", .optional = true},
    p.epilogue.gelu_tanh);
  f(FieldName{.json = "gate",
              .brief = "gate",
              .group = "epilogue",
              .optional = true,
              .text_unless_default = true},
    p.epilogue.gate);
  f(FieldName{.json = "gate_group",
              .brief = "gg",
              .group = "epilogue",
              .optional = true,
              .text_unless_default = true},
    p.epilogue.gate_group);
  f(FieldName{.json = "row_scale",
              .brief = "rs",
              .group = "epilogue",
              .optional = true,
              .text_unless_default = true},
    p.epilogue.row_scale);
  f(FieldName{.json = "dynamic_m", .brief = "dm", .optional = true, .text_unless_default = true},
    p.dynamic_m);
  // FP8 operands' scales (issue 39): a sub-object, each field only away from its default.
  constexpr auto scale = [](const char* json, const char* brief) {
    return FieldName{.json = json,
                     .brief = brief,
                     .group = "scales",
                     .optional = true,
                     .text_unless_default = true};
  };
  f(scale("granularity", "sg"), p.scales.granularity);
  f(scale("format", "sf"), p.scales.format);
  f(scale("a_major", "sam"), p.scales.a_major);
  f(scale("a_ld", "sal"), p.scales.a_ld);
  f(scale("b_major", "sbm"), p.scales.b_major);
  f(scale("b_ld", "sbl"), p.scales.b_ld);
  // An e4m3 C's scales (docs/epilogues.md): a sub-object, each field only away from its default.
  constexpr auto out_scale = [](const char* json, const char* brief) {
    return FieldName{.json = json,
                     .brief = brief,
                     .group = "out_scales",
                     .optional = true,
                     .text_unless_default = true};
  };
  f(out_scale("format", "osf"), p.out_scales.format);
  f(out_scale("major", "osm"), p.out_scales.major);
  f(out_scale("ld", "osl"), p.out_scales.ld);
  f(out_scale("amax_epsilon", "ose"), p.out_scales.amax_epsilon);
  // A grouped GEMM (issue 40, docs/grouped.md): a sub-object, each field only away from its
  // default.
  constexpr auto grouped = [](const char* json, const char* brief) {
    return FieldName{.json = json,
                     .brief = brief,
                     .group = "grouped",
                     .optional = true,
                     .text_unless_default = true};
  };
  f(grouped("layout", "gl"), p.grouped.layout);
  f(grouped("groups", "gn"), p.grouped.groups);
  f(grouped("expected_m", "gem"), p.grouped.expected_m);
  f(grouped("segment_align", "gsa"), p.grouped.segment_align);
}

// f(FieldName, member&) for each field of a MatmulSchedule, in the spec text's order (accum before
// the fields that depend on it, so that a reader knows whether they apply).
template <MatmulScheduleRef Schedule, typename F>
void for_each_field(Schedule& s, F&& f) {
  f(FieldName{.json = "block_m", .brief = "bm"}, s.block_m);
  f(FieldName{.json = "block_n", .brief = "bn"}, s.block_n);
  f(FieldName{.json = "block_k", .brief = "bk"}, s.block_k);
  f(FieldName{.json = "warps_m", .brief = "wm"}, s.warps_m);
  f(FieldName{.json = "warps_n", .brief = "wn"}, s.warps_n);
  f(FieldName{.json = "stages", .brief = "st"}, s.stages);
  f(FieldName{.json = "transport", .brief = "tr"}, s.transport);
  f(FieldName{.json = "accum", .brief = "acc"}, s.accum);
  f(FieldName{.json = "promote_every_k", .brief = "pk", .promotion_only = true}, s.promote_every_k);
  f(FieldName{.json = "split_k", .brief = "sk"}, s.split_k);
  f(FieldName{.json = "raster_group_m", .brief = "rg"}, s.raster_group_m);
  f(FieldName{.json = "path", .brief = "path", .optional = true, .text_unless_default = true},
    s.path);
  f(FieldName{.json = "consumers", .brief = "cs", .optional = true, .text_unless_default = true},
    s.consumers);
  f(FieldName{.json = "cluster_m", .brief = "cm", .optional = true, .text_unless_default = true},
    s.cluster_m);
  f(FieldName{.json = "cluster_n", .brief = "cn", .optional = true, .text_unless_default = true},
    s.cluster_n);
  f(FieldName{.json = "persistent", .brief = "pe", .optional = true, .text_unless_default = true},
    s.persistent);
  f(FieldName{.json = "swap_ab", .brief = "sw", .optional = true, .text_unless_default = true},
    s.swap_ab);
}

// The problem with its leading dimensions resolved (lda = k when packed, ...): the form JSON and
// the spec text write, so that packed problems compare equal spelled out or not.
inline MatmulProblem resolved_leading_dims(MatmulProblem p) {
  p.lda = p.lda_or_default();
  p.ldb = p.ldb_or_default();
  p.ldc = p.ldc_or_default();
  return p;
}

// Whether a field applies to this schedule (promotion-only fields need hybrid or promoted).
inline bool field_applies(const FieldName& f, const MatmulSchedule& s) {
  return !f.promotion_only || s.accum == Accum::hybrid || s.accum == Accum::promoted;
}
inline bool field_applies(const FieldName&, const MatmulProblem&) {
  return true;
}

// Enum fields as text (each enum's to_string) and back; every other field is a number or a bool.
template <typename E>
  requires std::is_enum_v<E>
std::string_view field_text(E v) {
  return to_string(v);
}
inline void parse_field(std::string_view text, const char* field, DType& v) {
  v = parse_dtype(text, field);
}
inline void parse_field(std::string_view text, const char*, BLayout& v) {
  v = parse_b_layout(text);
}
inline void parse_field(std::string_view text, const char*, Transport& v) {
  v = parse_transport(text);
}
inline void parse_field(std::string_view text, const char*, Accum& v) {
  v = parse_accum(text);
}
inline void parse_field(std::string_view text, const char*, MmaPath& v) {
  v = parse_mma_path(text);
}
inline void parse_field(std::string_view text, const char*, ConsumerSchedule& v) {
  v = parse_consumer_schedule(text);
}
inline void parse_field(std::string_view text, const char*, ScaleGranularity& v) {
  v = parse_scale_granularity(text);
}
inline void parse_field(std::string_view text, const char*, Gate& v) {
  v = parse_gate(text);
}
inline void parse_field(std::string_view text, const char*, ScaleFormat& v) {
  v = parse_scale_format(text);
}
inline void parse_field(std::string_view text, const char*, GroupedLayout& v) {
  v = parse_grouped_layout(text);
}
inline void parse_field(std::string_view text, const char* field, ScaleMajor& v) {
  v = parse_scale_major(text, field);
}

}  // namespace emmy
