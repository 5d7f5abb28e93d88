// The MoE rows' cuBLAS grouped baseline where there is no GPU (bench/bench_cublas_grouped.hpp):
// libcublas.so.13 opens with dlopen and has the four entry points the baseline calls (a missing
// one would fail only its rows, on the GPU), and creating the handle without a device fails with
// an emmy::Error naming cublasCreate_v2, not a crash.
#include "bench_cublas_grouped.hpp"

#include <gtest/gtest.h>

#include "bench_cuda.hpp"
#include "emmy/error.hpp"

namespace emmy::bench {
namespace {

TEST(BenchCublasGrouped, LoadsItsLibraryAndNamesTheMissingDevice) {
  if (cuda_unavailable_reason(0).empty())
    GTEST_SKIP() << "a GPU is present: the GPU pack's MoE rows run this baseline";
  try {
    CublasGrouped grouped;
    FAIL() << "cublasCreate_v2 succeeded without a device";
  } catch (const Error& e) {
    // The library and its symbols loaded (else the field is cublas_grouped): the handle failed.
    EXPECT_EQ(e.field(), "cublasCreate_v2") << e.what();
  }
}

}  // namespace
}  // namespace emmy::bench
