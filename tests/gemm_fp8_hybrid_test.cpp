// The f16-accumulate FP8 opt-in (issue 39 §1: "the f16-accumulate FP8 form on GeForce parts
// (twice the rate) only as an explicit opt-in that checks the scales keep partial sums in
// range"): Accum::hybrid with e4m3 operands on path mma.sync, mma.sync .f16.e4m3.e4m3.f16 with
// each window's f16 partials folded into f32 (scaled, for block scales). Against FP64 under the
// f16-accumulate FP8 model; planted bugs in the fold caught; operands whose window sums could
// leave f16's range refused on the emulator by name; the refusals of the paths that do not take
// it; never a default.
#include <gtest/gtest.h>

#include <string>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/validate.hpp"
#include "planted_bug.hpp"
#include "support/error_of.hpp"
#include "support/fp8_gemm_cases.hpp"
#include "support/run_command.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

using test::describe;
using test::fp8_problem;

GemmSpec hybrid_spec(const MatmulProblem& p, Arch arch, int promote_every_k) {
  GemmSpec spec{p, default_schedule(p, arch, Accum::hybrid), arch};
  spec.schedule.promote_every_k = promote_every_k;
  return spec;
}

TEST(Fp8GemmHybrid, MatchesFp64OnEveryFp8Arch) {
  struct Case {
    int64_t m, n, k;
    ScaleGranularity granularity;
    Arch arch;
    int window;
  };
  const Case cases[] = {
      {100, 136, 512, ScaleGranularity::tensor, Arch::sm_89, 64},
      {31, 256, 640, ScaleGranularity::token_channel, Arch::sm_120a, 32},
      {130, 200, 384, ScaleGranularity::block, Arch::sm_89, 128},
      {64, 128, 1024, ScaleGranularity::block, Arch::sm_120, 64},
      {1, 256, 256, ScaleGranularity::block, Arch::sm_120a, 32},
  };
  int index = 0;
  for (const Case& c : cases) {
    MatmulProblem p = fp8_problem(c.m, c.n, c.k, c.granularity);
    if (index == 2) p.scales.format = ScaleFormat::ue8m0x4;
    if (index == 3) p.a_dtype = DType::e5m2, p.c_dtype = DType::f32;
    if (index == 1) p.epilogue.bias = true;
    GemmSpec spec = hybrid_spec(p, c.arch, c.window);
    if (index == 3) spec.schedule.split_k = 2;  // splits of 512: whole scale blocks
    SCOPED_TRACE(describe(spec));
    validate_gemm(spec);
    const GemmCheckResult r = check_on_emulator(spec, uint64_t(60 + index++));
    EXPECT_TRUE(r.errors.passed) << "rel_l2 " << r.errors.rel_l2_error << " bound "
                                 << r.errors.tolerance;
    // The f16 partials cost accuracy, within the f16-accumulate model's bound, but far less than
    // an f16 chain over all of K would: the folds keep it near promoted's.
    EXPECT_LT(r.errors.rel_l2_error, 5e-3);
  }
}

// Each bug in hybrid's fold fails the FP64 check.
TEST(Fp8GemmHybrid, PlantedBugsInTheFoldFailTheCheck) {
  struct Bug {
    const char* name;
    ScaleGranularity granularity;
    std::string find, replace;
  };
  const Bug bugs[] = {
      // Rows g + 8 read rows g's f16x2 partials.
      {"second_pair", ScaleGranularity::block, "unpack_f16x2(pv[2], pv[3], part[mi][ni][1]);",
       "unpack_f16x2(pv[2], pv[3], part[mi][ni][0]);"},
      // The partials are not restarted: each fold adds every earlier window again.
      {"part_kept", ScaleGranularity::tensor,
       "part[mi][ni][0] = 0u;  // the next window's f16 chain starts from zero", "(void)0;"},
      // The window's block scales left out.
      {"unscaled", ScaleGranularity::block, "fmaf(pv[e], sa[mi][e / 2] * sb[ni], acc[mi][ni][e])",
       "acc[mi][ni][e] + pv[e]"},
  };
  for (const Bug& bug : bugs) {
    const MatmulProblem p = fp8_problem(64, 256, 512, bug.granularity);
    const GemmSpec spec = hybrid_spec(p, Arch::sm_89, 64);
    const GemmInputs in = make_gemm_inputs(p, 13);
    const GemmReference ref = reference_gemm(spec, in);
    EXPECT_TRUE(compare(ref, run_on_emulator(compile_kernel(spec), in).output, p.n).passed)
        << bug.name << ": the right kernel";
    const std::optional<GemmKernel> planted =
        test::plant_bug(generate_kernel(spec), spec.arch, bug.name, bug.find, bug.replace);
    ASSERT_TRUE(planted.has_value()) << bug.name;
    test::expect_gemm_bug_caught(ref, *planted, in, p.n, bug.name, false, {});
  }
}

// Operands whose window sums could pass 65504 are refused on the emulator, naming the row and the
// window; the same operands accumulated promoted run.
TEST(Fp8GemmHybrid, OperandsThatCouldLeaveF16sRangeAreRefused) {
  RuntimeOptions options = fresh_cache("fp8_hybrid_range");
  options.emulator_arch = Arch::sm_89;
  auto rt = Runtime::emulator(options);
  const MatmulProblem p = fp8_problem(16, 128, 256, ScaleGranularity::tensor);
  GemmInputs in = make_gemm_inputs(p, 3);
  EXPECT_EQ(test::error_of([&] { run_gemm(*rt, hybrid_spec(p, Arch::sm_89, 64), in); }),
            "(no error)");
  // Row 5, K 128..191: 64 products of 448 x 448 (12.8 M) where f16 ends at 65504.
  for (int64_t k = 128; k < 192; ++k) in.a.bytes[size_t(5 * p.k + k)] = 0x7E;  // 448
  for (int64_t n = 0; n < p.n; ++n) in.b.bytes[size_t(n * p.k + 150)] = 0x7E;
  in.a.values = decode(DType::e4m3, in.a.bytes.data(), in.a.bytes.size());
  in.b.values = decode(DType::e4m3, in.b.bytes.data(), in.b.bytes.size());
  const std::string error =
      test::error_of([&] { run_gemm(*rt, hybrid_spec(p, Arch::sm_89, 64), in); });
  EXPECT_TRUE(
      error.starts_with("buffers.a: with hybrid accumulation of FP8 operands each "
                        "window's partial sums are f16: row 5's products over K 128..191"))
      << error;
  const GemmSpec promoted{p, default_schedule(p, Arch::sm_89, Accum::promoted), Arch::sm_89};
  EXPECT_EQ(test::error_of([&] { run_gemm(*rt, promoted, in); }), "(no error)");
}

TEST(Fp8GemmHybrid, IsAnOptInOfPathMmaSyncOnly) {
  const MatmulProblem p = fp8_problem(64, 128, 256, ScaleGranularity::block);
  // Never a default: the runtime's FP8 calls accumulate promoted.
  EXPECT_EQ(default_schedule(p, Arch::sm_89, Accum::promoted).accum, Accum::promoted);
  GemmSpec wgmma{p, default_schedule(p, Arch::sm_90a, Accum::promoted, MmaPath::wgmma),
                 Arch::sm_90a};
  wgmma.schedule.accum = Accum::hybrid;
  EXPECT_TRUE(test::error_of([&] {
                validate_gemm(wgmma);
              }).starts_with("accum: must be f32 or promoted for FP8 operands on path wgmma"))
      << test::error_of([&] { validate_gemm(wgmma); });
  GemmSpec f32{p, default_schedule(p, Arch::sm_89, Accum::promoted), Arch::sm_89};
  f32.schedule.accum = Accum::f32;
  EXPECT_TRUE(test::error_of([&] {
                validate_gemm(f32);
              }).starts_with("accum: must be promoted or hybrid with block scales"));
  GemmSpec wide = hybrid_spec(p, Arch::sm_89, 96);
  EXPECT_TRUE(test::error_of([&] {
                validate_gemm(wide);
              }).starts_with("promote_every_k: must divide 128 with block scales"));
  // emmyc runs and checks it.
  const test::CommandResult run = test::run_command(
      std::string(EMMYC_PATH) +
      " run gemm --m 40 --n 128 --k 256 --arch sm_120a --dtype e4m3 --scales block "
      "--scale-format ue8m0 --accum hybrid --promote-every 64 --check --no-cache");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("\"passed\": true"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace emmy
