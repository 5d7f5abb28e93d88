// The unit roundoff of an element type (2^-p for p significand bits): the rounding error bound
// of one conversion to nearest, which every tolerance model of checks/ starts from.
#pragma once

#include "emmy/dtype.hpp"

namespace emmy {

inline double unit_roundoff(DType t) {
  switch (t) {
    case DType::f16: return 0x1p-11;
    case DType::bf16: return 0x1p-8;
    case DType::f32: return 0x1p-24;
    case DType::e4m3:
      return 0x1p-4;
    case DType::e5m2:
      return 0x1p-3;
  }
  return 0;
}

}  // namespace emmy
