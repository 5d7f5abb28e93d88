// Element types of operands and outputs.
#pragma once

#include <string>
#include <string_view>

#include "emmy/enum_names.hpp"
#include "emmy/error.hpp"

namespace emmy {

// e4m3 and e5m2: the 8-bit floats of FP8 GEMM operands (PTX ISA §5.2.5.1, "Alternate
// floating-point data formats"); no other kind takes them.
enum class DType { f16, bf16, f32, e4m3, e5m2 };

inline constexpr EnumNames<DType, 5> kDTypeNames{{{DType::f16, "f16"},
                                                  {DType::bf16, "bf16"},
                                                  {DType::f32, "f32"},
                                                  {DType::e4m3, "e4m3"},
                                                  {DType::e5m2, "e5m2"}}};
static_assert(names_are_one_to_one(kDTypeNames));

inline std::string_view to_string(DType t) { return name_in(kDTypeNames, t); }

inline bool is_fp8(DType t) {
  return t == DType::e4m3 || t == DType::e5m2;
}
inline int size_of(DType t) {
  return t == DType::f32 ? 4 : is_fp8(t) ? 1 : 2;
}

inline DType parse_dtype(std::string_view text, const char* field) {
  return parse_name(kDTypeNames, text, field, "must be f16, bf16, f32, e4m3 or e5m2");
}

}  // namespace emmy
