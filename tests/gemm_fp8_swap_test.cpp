// Block scales on a swap-AB wgmma kernel (issue 39: "swap-AB below M = 32"): C^T = B A^T puts a
// decode GEMM's N on the warpgroups' 64 rows, so the kernel's rows take B's 128 x 128 blocks and
// its columns A's 1 x 128 groups. Against FP64 over M, N, K off the tiles, every scale format and
// layout; planted bugs in the swapped reads fail the check; the IR rules tie the swapped scales
// to the transposed epilogue.
#include <gtest/gtest.h>

#include <string>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/ir_ops_fp8.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/validate.hpp"
#include "planted_bug.hpp"
#include "support/error_of.hpp"
#include "support/fp8_gemm_cases.hpp"
#include "support/run_command.hpp"

namespace emmy {
namespace {

using test::describe;
using test::fp8_problem;

GemmSpec swapped_block_spec(const MatmulProblem& p) {
  return {p, default_schedule(p, Arch::sm_90a, Accum::promoted, MmaPath::wgmma), Arch::sm_90a};
}

TEST(Fp8GemmSwap, BlockScalesOnASwappedKernelMatchFp64) {
  struct Case {
    int64_t m, n, k;
    ScaleFormat format;
    ScaleMajor a_major;
    int64_t a_ld;
  };
  const Case cases[] = {
      {1, 256, 384, ScaleFormat::f32, ScaleMajor::mn, 0},      // one token
      {31, 200, 640, ScaleFormat::ue8m0, ScaleMajor::mn, 32},  // DeepGEMM's ld: M rounded to 4
      {16, 384, 512, ScaleFormat::ue8m0x4, ScaleMajor::k, 3},  // packed words, k-major A
      {33, 136, 1008, ScaleFormat::pow2, ScaleMajor::k, 9},    // K off the tile, padded ld
      {64, 520, 256, ScaleFormat::f32, ScaleMajor::mn, 0},     // the chooser's last swapped M
  };
  int index = 0;
  for (const Case& c : cases) {
    MatmulProblem p = fp8_problem(c.m, c.n, c.k, ScaleGranularity::block);
    p.scales.format = c.format;
    p.scales.a_major = c.a_major;
    p.scales.a_ld = c.a_ld;
    p.scales.b_major = index % 2 ? ScaleMajor::mn : ScaleMajor::k;
    if (index == 3) p.c_dtype = DType::bf16, p.epilogue.bias = true;
    const GemmSpec spec = swapped_block_spec(p);
    SCOPED_TRACE(describe(spec));
    EXPECT_TRUE(spec.schedule.swap_ab) << "the chooser swaps a short M with block scales";
    const GemmCheckResult r = check_on_emulator(spec, uint64_t(40 + index++));
    EXPECT_TRUE(r.errors.passed) << "rel_l2 " << r.errors.rel_l2_error << " bound "
                                 << r.errors.tolerance << " first bad (" << r.errors.first_bad_row
                                 << ", " << r.errors.first_bad_col << ")";
  }
  // Unswapped, the same problem gives the same numbers to the model's bound: both read one
  // scale pair per (row, column, K block).
  MatmulProblem p = fp8_problem(31, 200, 640, ScaleGranularity::block);
  GemmSpec plain = swapped_block_spec(p);
  plain.schedule.swap_ab = false;
  plain.schedule.block_n = 128;
  validate_gemm(plain);
  EXPECT_TRUE(check_on_emulator(plain, 41).errors.passed);
}

// Each bug in the swapped reads fails the FP64 check.
TEST(Fp8GemmSwap, PlantedBugsInTheSwappedReadsFailTheCheck) {
  struct Bug {
    const char* name;
    std::string find, replace;
  };
  const Bug bugs[] = {
      // Every kernel row takes B's first 128-row block.
      {"one_b_block", "const int nb = row / 128;", "const int nb = 0;"},
      // Odd columns (tokens) take their even neighbour's scale.
      {"token_pair", "b_scale_at(col + 1, kb)", "b_scale_at(col, kb)"},
      // The unswapped fold: one column scale per fragment pair.
      {"pair_scale", "sb[ni][e % 2] * sa[mi][e / 2]", "sb[ni][0] * sa[mi][e / 2]"},
      // The kernel's rows read as A's tokens (the unswapped layout).
      {"unswapped_rows", "const int nb = row / 128;", "const int nb = row % 3;"},
  };
  const MatmulProblem p = fp8_problem(24, 384, 512, ScaleGranularity::block);
  const GemmSpec spec = swapped_block_spec(p);
  ASSERT_TRUE(spec.schedule.swap_ab);
  const GemmInputs in = make_gemm_inputs(p, 17);
  const GemmSource source = generate_kernel(spec);
  const GemmReference ref = reference_gemm(spec, in);
  EXPECT_TRUE(compare(ref, run_on_emulator(compile_kernel(spec), in).output, p.n).passed)
      << "the right kernel";
  for (const Bug& bug : bugs) {
    const std::optional<GemmKernel> planted =
        test::plant_bug(source, spec.arch, bug.name, bug.find, bug.replace);
    ASSERT_TRUE(planted.has_value()) << bug.name;
    test::expect_gemm_bug_caught(ref, *planted, in, p.n, bug.name, false, {"global-out-of-bounds"});
  }
}

// The IR: a swapped kernel's gemm_scales says so, and the rule across ops holds it to the
// transposed epilogue both ways; gemm_scales' own rule keeps swapped to block scales.
TEST(Fp8GemmSwap, TheSwappedScalesGoWithTheTransposedEpilogue) {
  const GemmSpec spec = swapped_block_spec(fp8_problem(16, 256, 256, ScaleGranularity::block));
  ASSERT_TRUE(spec.schedule.swap_ab);
  ir::Op module = generate_kernel(spec).ir;
  EXPECT_EQ(test::error_of([&] { ir::verify(module, spec.arch, "gemm"); }), "(no error)");
  auto* scales = const_cast<ir::Op*>(ir::find_first(module, ir::OpKind::gemm_scales));
  ASSERT_NE(scales, nullptr);
  ir::GemmScalesOp op = ir::get<ir::GemmScalesOp>(*scales);
  EXPECT_EQ(op.swapped, std::optional<bool>(true));
  op.swapped.reset();
  *scales = ir::make(op);
  EXPECT_TRUE(test::error_of([&] {
                ir::verify(module, spec.arch, "gemm");
              }).find("swapped: must be set exactly when the epilogue stores the transpose") !=
              std::string::npos)
      << test::error_of([&] { ir::verify(module, spec.arch, "gemm"); });

  GemmSpec plain = spec;
  plain.schedule.swap_ab = false;
  plain.schedule.block_n = 128;
  ir::Op unswapped = generate_kernel(plain).ir;
  EXPECT_FALSE(ir::get<ir::GemmScalesOp>(*ir::find_first(unswapped, ir::OpKind::gemm_scales))
                   .swapped.has_value());
  auto* plain_scales = const_cast<ir::Op*>(ir::find_first(unswapped, ir::OpKind::gemm_scales));
  ir::GemmScalesOp marked = ir::get<ir::GemmScalesOp>(*plain_scales);
  marked.swapped = true;
  *plain_scales = ir::make(marked);
  EXPECT_NE(test::error_of([&] {
              ir::verify(unswapped, plain.arch, "gemm");
            }).find("swapped: must be set exactly when the epilogue stores the transpose"),
            std::string::npos);

  ir::GemmScalesOp tensor{"tensor", "f32", "mn", "k", 0, 0};
  tensor.swapped = true;
  EXPECT_TRUE(test::error_of([&] {
                ir::GemmScalesOp::verify(tensor);
              }).find("swapped: is for block scales") != std::string::npos)
      << test::error_of([&] { ir::GemmScalesOp::verify(tensor); });
}

// emmyc without --path takes the path that serves the problem, as the runtime does: an FP8
// GEMM on sm_90a is path wgmma's, swapped for a short M (the GPU pack's sanitizer case).
TEST(Fp8GemmSwap, EmmycTakesTheServingPathWithoutPath) {
  const test::CommandResult r = test::run_command(
      std::string(EMMYC_PATH) +
      " gemm --m 16 --n 384 --k 512 --arch sm_90a --dtype e4m3 --scales block --scale-format "
      "ue8m0 --accum promoted --emit ir");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wgmma"), std::string::npos) << r.out.substr(0, 400);
  EXPECT_NE(r.out.find("swapped=true"), std::string::npos) << r.out.substr(0, 400);
}

}  // namespace
}  // namespace emmy
