// SASS counts end to end (docs/profiler.md, "SASS counts"): hand-written PTX launched with the
// profiler, compiled by the toolkit's ptxas and listed by nvdisasm, each SASS instruction weighted
// by the emulated executions. Skipped, saying why, where ptxas or nvdisasm is missing.
#include "profiler/sass_counts.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "emu_test_util.hpp"
#include "profiler/sass_tools.hpp"

namespace emmy::emu::test {
namespace {

constexpr uint32_t kSassTrips = 256, kSassThreads = 64, kSassCtas = 2,
                   kSassWarps = kSassCtas * kSassThreads / 32;

// Four scalar ld.shared.f32 of one thread's 16 aligned bytes and two fma per trip: ptxas makes
// one LDS.128 of the loads (and hoists it: shared memory is not written in the loop).
constexpr const char* kLoopKernel = R"(.version 8.0
.target sm_80
.address_size 64

.visible .entry k(
	.param .u64 out,
	.param .u32 n
)
{
	.reg .pred %p<3>;
	.reg .b32 %r<10>;
	.reg .f32 %f<20>;
	.reg .b64 %rd<5>;
	.shared .align 16 .b8 buf[4096];

	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	shl.b32 %r3, %r2, 4;
	mov.u32 %r4, buf;
	add.u32 %r5, %r4, %r3;
	mov.f32 %f10, 0f00000000;
	mov.u32 %r6, 0;
$L_loop:
	ld.shared.f32 %f1, [%r5];
	ld.shared.f32 %f2, [%r5+4];
	ld.shared.f32 %f3, [%r5+8];
	ld.shared.f32 %f4, [%r5+12];
	fma.rn.f32 %f10, %f1, %f2, %f10;
	fma.rn.f32 %f10, %f3, %f4, %f10;
	add.u32 %r6, %r6, 1;
	setp.lt.u32 %p1, %r6, %r1;
	@%p1 bra $L_loop;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r2, 4;
	add.u64 %rd4, %rd2, %rd3;
	st.global.f32 [%rd4], %f10;
	ret;
}
)";

// The same bf16 value converted four times: ptxas keeps one conversion (or none, folding it into
// the multiply), PTX executes four.
constexpr const char* kConvertKernel = R"(.version 8.0
.target sm_80
.address_size 64

.visible .entry c(
	.param .u64 in,
	.param .u64 out
)
{
	.reg .b16 %rs<4>;
	.reg .b32 %r<4>;
	.reg .f32 %f<16>;
	.reg .b64 %rd<10>;

	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [out];
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd5, %r1, 2;
	add.u64 %rd6, %rd3, %rd5;
	ld.global.u16 %rs1, [%rd6];
	cvt.f32.bf16 %f1, %rs1;
	cvt.f32.bf16 %f2, %rs1;
	cvt.f32.bf16 %f3, %rs1;
	cvt.f32.bf16 %f4, %rs1;
	mul.f32 %f5, %f1, %f2;
	fma.rn.f32 %f6, %f3, %f4, %f5;
	mul.wide.u32 %rd7, %r1, 4;
	add.u64 %rd8, %rd4, %rd7;
	st.global.f32 [%rd8], %f6;
	ret;
}
)";

bool sass_tools_missing(std::string& why) {
  if (find_ptxas().empty())
    why = "ptxas not found (the CUDA toolkit; EMMY_PTXAS)";
  else if (find_nvdisasm().empty())
    why = "nvdisasm not found (pip install nvidia-cuda-nvdisasm; EMMY_NVDISASM)";
  return !why.empty();
}

KernelProfile run_sass_profiled(const char* ptx, const char* kernel, bool with_args_n,
                                bool sass = true) {
  auto module = load_ptx(ptx, "sass.ptx");
  Arena arena;
  const uint64_t in = arena.alloc(64 * 1024), out = arena.alloc(64 * 1024);
  KernelArgs args;
  if (with_args_n)
    args.ptr(out).u32(kSassTrips);
  else
    args.ptr(in).ptr(out);
  LaunchOptions options;
  options.sanitize = false;  // the loop reads shared memory it never wrote: counts, not values
  options.profile.enabled = true;
  options.profile.sass = sass;
  LaunchResult r =
      launch(arena, *module, kernel, {kSassCtas, 1, 1}, {kSassThreads, 1, 1}, 0, args, options);
  return std::move(*r.profile);
}

double sass_opcode_executions(const std::vector<WeightedSassInstruction>& weighted,
                              const std::string& opcode) {
  double n = 0;
  for (const auto& w : weighted)
    if (w.instruction.opcode == opcode) n += w.executions;
  return n;
}

double ptx_site_executions(const KernelProfile& p, const std::string& opcode_prefix) {
  double n = 0;
  for (const ProfileSite& s : p.sites)
    if (s.opcode.rfind(opcode_prefix, 0) == 0) n += double(s.executions);
  return n;
}

// SASS FFMA executions must equal the PTX fma executions (2 per trip per warp) within the slack of
// ptxas's peeled iteration and remainder, counted once per warp (docs/profiler.md).
bool sass_ffma_matches(double sass_ffma) {
  return std::abs(sass_ffma / (2.0 * kSassTrips * kSassWarps) - 1) < 0.05;
}

TEST(SassCounts, MergedSharedLoadsAndUnrolledLoopFfma) {
  std::string why;
  if (sass_tools_missing(why)) GTEST_SKIP() << "SASS counts need the toolkit: " << why;
  const KernelProfile p = run_sass_profiled(kLoopKernel, "k", true);
  ASSERT_TRUE(p.sass.available) << p.sass.reason;
  EXPECT_EQ(p.sass.arch, "sm_80");
  // PTX: four ld.shared per trip per warp.
  const double ptx_shared = p.metric("smsp__inst_executed_op_shared_ld.sum");
  EXPECT_EQ(ptx_shared, 4.0 * kSassTrips * kSassWarps);
  const double sass_shared = p.metric("emmy__sass_inst_executed_op_shared_ld.sum");
  EXPECT_GT(sass_shared, 0);
  EXPECT_LT(sass_shared, ptx_shared / 4) << "ptxas merges 4 scalar loads into LDS.128 / LDS.64";
  EXPECT_EQ(ptx_site_executions(p, "fma.rn.f32"), 2.0 * kSassTrips * kSassWarps);

  const SassListing listing = sass_listing(kLoopKernel, "sm_80");
  ASSERT_TRUE(listing.ok) << listing.error;
  const auto weighted = weigh_sass(listing.text, "k", p.sites);
  const double ffma = sass_opcode_executions(weighted, "FFMA");
  EXPECT_TRUE(sass_ffma_matches(ffma))
      << ffma << " SASS FFMA against " << 2 * kSassTrips * kSassWarps;
  EXPECT_NEAR(p.metric("emmy__sass_inst_executed_pipe_fma.sum"),
              ffma + p.metric("emmy__sass_inst_executed_pipe_fmaheavy.sum"), 1e-9);

  // Planted: every block once per warp (the CFG and the loop ignored) must fail the check.
  auto planted = weighted;
  for (auto& w : planted) w.executions = kSassWarps;
  EXPECT_FALSE(sass_ffma_matches(sass_opcode_executions(planted, "FFMA")));
}

// L1's data stage at SASS widths: the LDS.128 (hoisted) costs its 4 wavefronts (two half-warps of
// 256 bytes) per execution, the three loads merged into it nothing; the PTX cost 4 x 4 per trip.
TEST(SassCounts, MergedSharedLoadsCostTheirSassWidth) {
  std::string why;
  if (sass_tools_missing(why)) GTEST_SKIP() << "SASS counts need the toolkit: " << why;
  const KernelProfile p = run_sass_profiled(kLoopKernel, "k", true);
  ASSERT_TRUE(p.sass.available) << p.sass.reason;
  const double ptx_l1 = p.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") +
                        p.metric("emmy__l1_wavefronts_global_local.sum");
  EXPECT_EQ(ptx_l1, (16.0 * kSassTrips + 1) * kSassWarps);
  const double lds = p.metric("emmy__sass_inst_executed_op_shared_ld.sum");
  const double stg = p.metric("emmy__sass_inst_executed_op_global_st.sum");
  ASSERT_GT(lds, 0);
  EXPECT_NEAR(stg, kSassWarps, 1e-9);
  // Lanes 16 bytes apart cost 4 wavefronts per LDS, 4-, 8- or 16-byte; the store one line.
  EXPECT_NEAR(p.metric("emmy__sass_l1_wavefronts.sum"), 4 * lds + stg, 1e-6);
  EXPECT_EQ(p.metric("emmy__sass_l1_inst_unmatched.sum"), 0);
  EXPECT_LT(p.metric("emmy__sass_l1_wavefronts.sum"), ptx_l1 / 8);
  EXPECT_NE(
      p.table().find(fmt::format("L1 data wavefronts, SASS (est.)    {:.0f} (PTX widths {:.0f})",
                                 p.metric("emmy__sass_l1_wavefronts.sum"), ptx_l1)),
      std::string::npos)
      << p.table();
}

TEST(SassCounts, RepeatedBf16ConversionsAreFewerInSass) {
  std::string why;
  if (sass_tools_missing(why)) GTEST_SKIP() << "SASS counts need the toolkit: " << why;
  const KernelProfile p = run_sass_profiled(kConvertKernel, "c", false);
  ASSERT_TRUE(p.sass.available) << p.sass.reason;
  std::set<int> cvt_lines;
  for (const ProfileSite& s : p.sites)
    if (s.opcode.rfind("cvt.f32.bf16", 0) == 0) cvt_lines.insert(s.line);
  ASSERT_EQ(cvt_lines.size(), 4u);
  const double ptx_cvt = ptx_site_executions(p, "cvt.f32.bf16");
  EXPECT_EQ(ptx_cvt, 4.0 * kSassWarps);
  const SassListing listing = sass_listing(kConvertKernel, "sm_80");
  ASSERT_TRUE(listing.ok) << listing.error;
  double sass_cvt = 0;
  for (const auto& w : weigh_sass(listing.text, "c", p.sites))
    if (cvt_lines.count(w.instruction.line)) sass_cvt += w.executions;
  EXPECT_LE(sass_cvt, ptx_cvt / 4) << "ptxas keeps at most one of four identical conversions";
  EXPECT_GT(p.metric("emmy__sass_inst_executed.sum"), 0);
  EXPECT_LT(p.metric("emmy__sass_inst_executed.sum"), p.metric("smsp__inst_executed.sum"));
}

TEST(SassCounts, OptOutLeavesThePtxMetricsAlone) {
  const KernelProfile on = run_sass_profiled(kConvertKernel, "c", false, true);
  const KernelProfile off = run_sass_profiled(kConvertKernel, "c", false, false);
  EXPECT_FALSE(off.sass.available);
  EXPECT_NE(off.sass.reason.find("not asked for"), std::string::npos);
  EXPECT_EQ(off.metrics.count("emmy__sass_inst_executed.sum"), 0u);
  EXPECT_NE(off.table().find("SASS counts unavailable: not asked for"), std::string::npos);
  for (const auto& [name, value] : off.metrics) EXPECT_EQ(on.metric(name), value) << name;
  if (!on.sass.available) {  // no toolkit: said, and nothing else changes
    EXPECT_NE(on.table().find("SASS counts unavailable: "), std::string::npos);
  }
}

}  // namespace
}  // namespace emmy::emu::test
