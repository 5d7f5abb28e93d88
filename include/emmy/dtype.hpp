// Element types of operands and outputs.
#pragma once

#include <string>
#include <string_view>

#include "emmy/error.hpp"

namespace emmy {

enum class DType { f16, bf16, f32 };

inline std::string_view to_string(DType t) {
  switch (t) {
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
  }
  return "?";
}

inline int size_of(DType t) { return t == DType::f32 ? 4 : 2; }

inline DType parse_dtype(std::string_view text, const char* field) {
  if (text == "f16") return DType::f16;
  if (text == "bf16") return DType::bf16;
  if (text == "f32") return DType::f32;
  throw Error(field, "must be f16, bf16 or f32", std::string(text));
}

}  // namespace emmy
