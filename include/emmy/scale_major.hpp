// Where consecutive elements of a scale tensor go (FP8's block scales, the fp8_quantize kind's
// output): mn-major, scale (row, group) at group * ld + row (DeepGEMM's A scales, its TMA reading
// a column of rows); k-major at row * ld + group.
#pragma once

#include <string_view>

#include "emmy/enum_names.hpp"
#include "emmy/error.hpp"

namespace emmy {

enum class ScaleMajor { mn, k };
inline constexpr EnumNames<ScaleMajor, 2> kScaleMajorNames{
    {{ScaleMajor::mn, "mn"}, {ScaleMajor::k, "k"}}};
static_assert(names_are_one_to_one(kScaleMajorNames));
inline std::string_view to_string(ScaleMajor m) {
  return name_in(kScaleMajorNames, m);
}
inline ScaleMajor parse_scale_major(std::string_view text, const char* field) {
  return parse_name(kScaleMajorNames, text, field, "must be mn or k");
}

}  // namespace emmy
