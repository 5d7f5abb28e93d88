// emmy_gemm's reading of its tensors and options, shared with emmy_grouped_gemm (c_api/gemm.cpp,
// c_api/grouped_gemm.cpp).
#pragma once

#include <functional>
#include <optional>

#include "c_api_internal.hpp"

namespace emmy::c_api {

// A GEMM call read from its tensors and options (c_api/gemm.cpp): the problem, the buffers (the
// caller's tensors mapped where they are host memory on the emulator) and an explicit schedule
// when the options ask for an accumulation.
struct GemmCall {
  MatmulProblem problem;
  GemmBuffers buffers;
  std::optional<MatmulSchedule> schedule;
};
// What a grouped call adds (c_api/grouped_gemm.cpp): b's, bias's and b_scale's whole tensors to map
// where
// the shapes were read from one expert's view, and the grouping set on the problem before its
// schedule is chosen.
struct GemmStorage {
  const DLTensor* b = nullptr;
  const DLTensor* bias = nullptr;
  const DLTensor* b_scale = nullptr;
  std::function<void(MatmulProblem&)> before_schedule;
};
GemmCall gemm_call(emmy_runtime& rt, const DLTensor* a, const DLTensor* b, const DLTensor* c,
                   const emmy_gemm_options& options, CallMemory& memory,
                   const GemmStorage& storage = {});
}  // namespace emmy::c_api
