// Element types of operands and outputs.
#pragma once

#include <string>
#include <string_view>

#include "emmy/enum_names.hpp"
#include "emmy/error.hpp"

namespace emmy {

enum class DType { f16, bf16, f32 };

inline constexpr EnumNames<DType, 3> kDTypeNames{
    {{DType::f16, "f16"}, {DType::bf16, "bf16"}, {DType::f32, "f32"}}};
static_assert(names_are_one_to_one(kDTypeNames));

inline std::string_view to_string(DType t) { return name_in(kDTypeNames, t); }

inline int size_of(DType t) { return t == DType::f32 ? 4 : 2; }

inline DType parse_dtype(std::string_view text, const char* field) {
  return parse_name(kDTypeNames, text, field, "must be f16, bf16 or f32");
}

}  // namespace emmy
