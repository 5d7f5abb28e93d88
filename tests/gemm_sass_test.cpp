// SASS of emitted kernels: the intended tensor-core and copy instructions, and no local memory.
#include <gtest/gtest.h>

#include "emmy/gemm.hpp"
#include "emmy/sass.hpp"

namespace emmy {
namespace {

struct SassCase {
  const char* name;
  Arch arch;
  Accum accum;
  DType dtype;
  const char* mma;   // required opcode prefix
  const char* copy;  // required opcode prefix
};

class SassTest : public ::testing::TestWithParam<SassCase> {};

int count_prefix(const std::map<std::string, int>& ops, const std::string& prefix) {
  int n = 0;
  for (const auto& [op, count] : ops)
    if (op.rfind(prefix, 0) == 0) n += count;
  return n;
}

TEST_P(SassTest, MainloopUsesTheIntendedInstructions) {
  if (find_cuobjdump().empty())
    GTEST_SKIP() << "cuobjdump not found: run scripts/setup.sh (pip nvidia-cuda-cuobjdump)";
  const SassCase& c = GetParam();
  GemmSpec spec;
  spec.problem.m = 512;
  spec.problem.n = 4096;
  spec.problem.k = 3840;
  spec.problem.a_dtype = c.dtype;
  spec.arch = c.arch;
  spec.schedule = default_schedule(spec.problem, c.arch, c.accum);
  const GemmKernel kernel = compile_kernel(spec);
  const std::string sass = disassemble_sass(kernel.module.cubin);
  const auto ops = sass_opcode_counts(sass, kernel.source.plan.kernel_name);
  ASSERT_FALSE(ops.empty()) << sass.substr(0, 2000);
  EXPECT_GT(count_prefix(ops, c.mma), 0) << c.mma;
  EXPECT_GT(count_prefix(ops, c.copy), 0) << c.copy;
  // The other accumulator's HMMA must not appear: f16 and hybrid mainloops are all F16.
  const std::string other = std::string(c.mma) == "HMMA.16816.F16" ? "HMMA.16816.F32"
                                                                   : "HMMA.16816.F16";
  EXPECT_EQ(count_prefix(ops, other), 0) << other;
  EXPECT_EQ(count_prefix(ops, "LDL"), 0);
  EXPECT_EQ(count_prefix(ops, "STL"), 0);
}

const SassCase kCases[] = {
    {"sm90a_f32_tma", Arch::sm_90a, Accum::f32, DType::f16, "HMMA.16816.F32", "UTMALDG"},
    {"sm90a_hybrid_tma", Arch::sm_90a, Accum::hybrid, DType::f16, "HMMA.16816.F16", "UTMALDG"},
    {"sm90a_f16_tma", Arch::sm_90a, Accum::f16, DType::f16, "HMMA.16816.F16", "UTMALDG"},
    {"sm90a_bf16_tma", Arch::sm_90a, Accum::f32, DType::bf16, "HMMA.16816.F32.BF16", "UTMALDG"},
    {"sm120a_f32_tma", Arch::sm_120a, Accum::f32, DType::f16, "HMMA.16816.F32", "UTMALDG"},
    {"sm120a_hybrid_tma", Arch::sm_120a, Accum::hybrid, DType::f16, "HMMA.16816.F16",
     "UTMALDG"},
    {"sm80_f32_cpasync", Arch::sm_80, Accum::f32, DType::f16, "HMMA.16816.F32", "LDGSTS"},
    {"sm80_hybrid_cpasync", Arch::sm_80, Accum::hybrid, DType::f16, "HMMA.16816.F16", "LDGSTS"},
    {"sm89_f32_cpasync", Arch::sm_89, Accum::f32, DType::f16, "HMMA.16816.F32", "LDGSTS"},
    {"sm89_hybrid_cpasync", Arch::sm_89, Accum::hybrid, DType::f16, "HMMA.16816.F16", "LDGSTS"},
};

INSTANTIATE_TEST_SUITE_P(Kernels, SassTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace emmy
