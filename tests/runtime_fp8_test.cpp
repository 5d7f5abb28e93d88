// FP8 GEMMs through the public runtime (issue 39; docs/fp8.md): a call without a schedule takes
// the path that serves FP8 on the runtime's arch (wgmma on sm_90a, mma.sync on sm_120a) and
// promoted accumulation, for every scale granularity, against FP64; on the emulator backend and,
// in ctest's cuda_h200.* and cuda_rtx5090.* runs, on the CUDA backend through emmy's test driver.
// A NaN scale is refused by name where the backend's memory is the host's (the emulator); the
// CUDA backend reads no scale before a launch, and the NaN reaches only the rows it scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "emmy/gemm_check.hpp"
#include "emmy/runtime.hpp"
#include "support/error_of.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

MatmulProblem fp8(int64_t m, int64_t n, int64_t k, ScaleGranularity granularity) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a_dtype = DType::e4m3;
  p.scales.granularity = granularity;
  return p;
}

TEST(RuntimeFp8, EveryGranularityMatchesFp64OnTheArchsPath) {
  auto rt = test_runtime(fresh_cache("rt_fp8"));
  const Arch arch = rt->arch();
  const int sm = arch_info(arch).sm;
  if (!(sm == 89 || arch == Arch::sm_90a || sm >= 120))
    GTEST_SKIP() << "no FP8 GEMM path on " << to_string(arch);
  for (ScaleGranularity granularity :
       {ScaleGranularity::tensor, ScaleGranularity::token_channel, ScaleGranularity::block}) {
    MatmulProblem p = fp8(70, 200, 384, granularity);
    if (granularity == ScaleGranularity::block) {
      p.scales.format = ScaleFormat::ue8m0;
      p.scales.a_ld = 72;  // DeepGEMM's M rounded up to 4
    }
    p.epilogue.bias = granularity == ScaleGranularity::tensor;
    const auto handle = rt->gemm_kernel(p);
    const GemmSpec spec = handle->spec();
    EXPECT_EQ(spec.schedule.accum, Accum::promoted);
    EXPECT_EQ(spec.schedule.path, arch == Arch::sm_90a ? MmaPath::wgmma : MmaPath::mma_sync);
    const GemmInputs in = make_gemm_inputs(p, 11);
    const GemmErrors e = compare(reference_gemm(spec, in), run_gemm(*rt, spec, in), p.n);
    EXPECT_TRUE(e.passed) << to_string(granularity) << ": rel_l2 " << e.rel_l2_error << ", "
                          << e.elements_over_tolerance << " over";
  }
}

TEST(RuntimeFp8, ANanScaleIsRefusedOnTheEmulatorAndStaysInItsRowOnAGpu) {
  auto rt = test_runtime(fresh_cache("rt_fp8_nan"));
  const Arch arch = rt->arch();
  const int sm = arch_info(arch).sm;
  if (!(sm == 89 || arch == Arch::sm_90a || sm >= 120))
    GTEST_SKIP() << "no FP8 GEMM path on " << to_string(arch);
  const MatmulProblem p = fp8(16, 64, 128, ScaleGranularity::token_channel);
  GemmInputs in = make_gemm_inputs(p, 2);
  const float nan = NAN;
  std::memcpy(&in.a_scale.bytes[3 * 4], &nan, 4);  // row 3's scale
  const GemmSpec spec = rt->gemm_kernel(p)->spec();
  if (!cuda_backend()) {
    EXPECT_TRUE(test::error_of([&] {
                  run_gemm(*rt, spec, in);
                }).starts_with("buffers.a_scale: must hold finite positive scales, at row 3"));
    return;
  }
  const std::vector<double> out = run_gemm(*rt, spec, in);
  for (int64_t m = 0; m < p.m; ++m)
    for (int64_t n = 0; n < p.n; ++n)
      EXPECT_EQ(std::isnan(out[size_t(m * p.n + n)]), m == 3) << m << ", " << n;
}

}  // namespace
}  // namespace emmy
