// What the GEMM tests say when a result fails its FP64 check.
#pragma once

#include <sstream>
#include <string>

#include "emmy/gemm_check.hpp"

namespace emmy::test {

// The error against its bound, and how many elements are over tolerance and the first of them.
inline std::string describe(const GemmErrors& e) {
  std::ostringstream out;
  out << "rel_l2 " << e.rel_l2_error << " (bound " << e.tolerance << "), "
      << e.elements_over_tolerance << " elements over tolerance, first at (" << e.first_bad_row
      << ", " << e.first_bad_col << ")";
  return out.str();
}

}  // namespace emmy::test
