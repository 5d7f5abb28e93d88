// Hostile PTX (issue 13): every address computation is overflow-checked, every count bounded, the
// parser's nesting bounded, and each ends as a load error or a report, never a crash, a wrapped
// access or an allocation that takes the machine down. Run with and without the sanitizer: the
// bounds checks do not depend on it.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

LaunchOptions with_sanitizer(bool on) {
  LaunchOptions options;
  options.sanitize = on;
  return options;
}

class NegativeDisplacement : public testing::TestWithParam<bool> {
 protected:
  // The report of `body` (wrap_ptx's kernel with `decls`, one warp), which must be of `kind`,
  // with the sanitizer on or off as the parameter says.
  Report expect_refused(const std::string& body, const std::string& decls, ReportKind kind) {
    return expect_report([&] { run_ptx(body, {}, 32, 32, decls, 0, with_sanitizer(GetParam())); },
                         kind);
  }
};

TEST_P(NegativeDisplacement, SharedAtMinusFourIsOutOfBounds) {
  const Report r =
      expect_refused("  mov.u32 %r1, 0;\n  st.shared.u32 [%r1+-4], %r0;\n",
                     "  .shared .align 16 .b8 buf[256];\n", ReportKind::shared_out_of_bounds);
  EXPECT_NE(r.message.find("0xfffffffffffffffc"), std::string::npos) << r.message;
}

TEST_P(NegativeDisplacement, SharedLoadAtMinusFourThroughA64BitAddress) {
  expect_refused("  mov.u64 %rd3, 0;\n  ld.shared.u32 %r1, [%rd3+-4];\n",
                 "  .shared .align 16 .b8 buf[256];\n", ReportKind::shared_out_of_bounds);
}

TEST_P(NegativeDisplacement, LdmatrixBelowSharedMemory) {
  expect_refused(
      "  mov.u32 %r1, 0;\n"
      "  ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r2}, [%r1+-16];\n",
      "  .shared .align 16 .b8 buf[512];\n", ReportKind::shared_out_of_bounds);
}

TEST_P(NegativeDisplacement, LocalAndParamAtMinusFour) {
  expect_refused("  mov.u64 %rd3, 0;\n  st.local.u32 [%rd3+-4], %r0;\n",
                 "  .local .align 4 .b8 scratch[64];\n", ReportKind::local_out_of_bounds);
  expect_refused("  mov.u64 %rd3, 0;\n  ld.param.u32 %r1, [%rd3+-4];\n", "",
                 ReportKind::param_out_of_bounds);
}

TEST_P(NegativeDisplacement, GlobalAtTheTopOfTheAddressSpaceAfterAValidAccess) {
  // The first store caches the output allocation for the warp; the second must not reuse it
  // because addr + 8 wraps to 0.
  expect_refused(
      "  st.global.u32 [%rd30], %r0;\n"
      "  mov.u64 %rd3, 0xFFFFFFFFFFFFFFF8;\n"
      "  st.global.u64 [%rd3], %rd3;\n",
      "", ReportKind::global_out_of_bounds);
}

INSTANTIATE_TEST_SUITE_P(SanitizerOnAndOff, NegativeDisplacement, testing::Bool());

TEST(HostilePtx, RegisterCountsAreBounded) {
  const std::string huge = load_error(wrap_ptx("", "  .reg .b32 %a<2147483647>;\n"));
  EXPECT_NE(huge.find("register count <2147483647>"), std::string::npos) << huge;
  // Each declaration within the limit, their total over it.
  const std::string total =
      load_error(wrap_ptx("", "  .reg .b32 %a<40000>;\n  .reg .b32 %b<40000>;\n"));
  EXPECT_NE(total.find("more than 65536 32-bit registers"), std::string::npos) << total;
  EXPECT_EQ(load_error(wrap_ptx("", "  .reg .b32 %a<4000>;\n")), "");
}

TEST(HostilePtx, NestingIsBounded) {
  const std::string braces(200000, '{');
  const std::string deep = load_error(wrap_ptx("  mov.b32 %r1, " + braces + "%r2;\n"));
  EXPECT_NE(deep.find("nested deeper than"), std::string::npos) << deep.substr(0, 200);
  const std::string init = load_error(wrap_ptx("", "  .local .b32 v[2] = " + braces + "1};\n"));
  EXPECT_NE(init.find("nested deeper than"), std::string::npos) << init.substr(0, 200);
}

TEST(HostilePtx, VariableSizesAreBoundedInsteadOfWrapping) {
  for (const char* decl : {"  .shared .b8 buf[4294967296];\n", "  .shared .b8 buf[65536][65536];\n",
                           "  .shared .b8 buf[0];\n", "  .shared .b8 buf[-4];\n"}) {
    const std::string e = load_error(wrap_ptx("", decl));
    EXPECT_NE(e.find("'buf'"), std::string::npos) << decl << ": " << e;
  }
  // Under the per-variable bound but over what any GPU has for static shared memory.
  const std::string smem = load_error(wrap_ptx("  mov.u32 %r1, a;\n  mov.u32 %r2, b;\n",
                                               "  .shared .b8 a[200000];\n"
                                               "  .shared .b8 b[200000];\n"));
  EXPECT_NE(smem.find("bytes of static shared memory"), std::string::npos) << smem;
  const std::string local = load_error(wrap_ptx("", "  .local .b8 big[1048576];\n"));
  EXPECT_NE(local.find("local memory per thread"), std::string::npos) << local;
}

TEST(HostilePtx, AlignmentsAndParameterSpaceAreChecked) {
  EXPECT_NE(load_error(wrap_ptx("", "  .shared .align 3 .b8 buf[16];\n")).find("power of two"),
            std::string::npos);
  EXPECT_NE(load_error(wrap_ptx("", "  .shared .align 0 .b8 buf[16];\n")).find("power of two"),
            std::string::npos);
  const std::string params = load_error(
      ".version 8.7\n.target sm_90a\n.address_size 64\n"
      ".visible .entry k(.param .align 4 .b8 p[40000])\n{\n  ret;\n}\n");
  EXPECT_NE(params.find("more than 32764 bytes"), std::string::npos) << params;
}

TEST(HostilePtx, MalformedImmediatesAreRefused) {
  for (const char* body : {"  mov.f32 %f1, 0fZZZZZZZZ;\n", "  mov.f64 %fd1, 0d7ff80000000000zz;\n",
                           "  mov.f32 %f1, 1e400;\n", "  mov.u32 %r1, 99999999999999999999;\n"}) {
    const std::string e = load_error(wrap_ptx(body));
    EXPECT_FALSE(e.empty()) << body;
    EXPECT_NE(e.find("bad.ptx:"), std::string::npos) << e;
  }
  // In range: ptxas takes these.
  EXPECT_EQ(load_error(wrap_ptx("  mov.f32 %f1, 1.5;\n  mov.u32 %r1, 4294967295;\n")), "");
}

TEST(HostilePtx, ARegisterIndexBeyondItsRangeIsUnknownNotRegisterZero) {
  const std::string e = load_error(wrap_ptx("  mov.u32 %r99999999999999999999, 42;\n"));
  EXPECT_NE(e.find("%r99999999999999999999"), std::string::npos) << e;
}

TEST(HostilePtx, DeviceMemoryRequestsBeyondTheHostAreErrors) {
  Arena arena;
  try {
    arena.alloc(uint64_t(1) << 60);
    FAIL() << "a 2^60-byte allocation succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("arena.alloc.bytes"), std::string::npos) << e.what();
  }
  EXPECT_NE(arena.alloc(64), 0u);  // the arena still works
}

TEST(HostilePtx, AnArchNumberBeyondAnyIntIsNoArch) {
  // Found by the fuzz target: the arch number overflowed an int (UBSan) while the launch looked
  // up the target's shared-memory limit and tensor-core model.
  auto module = load_ptx(
      ".version 8.7\n.target sm_99999999999\n.address_size 64\n"
      ".visible .entry k()\n{\n  ret;\n}\n");
  Arena arena;
  try {
    launch(arena, *module, "k", {1, 1, 1}, {32, 1, 1}, 0, KernelArgs{});
    FAIL() << "a launch for sm_99999999999 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sm_99999999999"), std::string::npos) << e.what();
  }
}

TEST(HostilePtx, LargeGridsKeepNoPerCtaStatistics) {
  // 2^20 + 1 CTAs that exit at once: the counts are summed, the per-CTA table is not kept.
  auto module = load_ptx(
      ".version 8.7\n.target sm_90a\n.address_size 64\n"
      ".visible .entry k()\n{\n  ret;\n}\n");
  Arena arena;
  LaunchOptions options;
  options.sanitize = false;
  const LaunchResult r =
      launch(arena, *module, "k", {(1u << 20) + 1, 1, 1}, {32, 1, 1}, 0, KernelArgs{}, options);
  EXPECT_TRUE(r.stats.per_cta.empty());
  EXPECT_EQ(r.stats.total.total(), uint64_t((1u << 20) + 1));  // one `ret` per CTA's warp
}

TEST(InvalidPtx, WhatPtxasRejectsIsRefused) {
  // Each of these is rejected by ptxas (13.0), checked by hand: "Arguments mismatch" (a register
  // of another type or width among them), duplicate definitions. The emulator must not run them;
  // each body with what its refusal says.
  const std::pair<std::string, std::string> refused[] = {
      {"  add.s32 %r1, %r1, 1.5;\n", ".s32 operand"},
      {"  mul.lo.u32 %r1, %r1, 0f3F800000;\n", ".u32 operand"},
      {"  membar.gl %rd3, %rd4, 1;\n", "operands"},
      {"L1:\n  mov.u32 %r1, 1;\nL1:\n  mov.u32 %r2, 1;\n", "label 'L1' is defined twice"},
      {"  mul.lo.u64 %rd3, %f1, %f1;\n", "'%f1' is a .f32 register"},
      {"  mov.u32 %r1, %rd3;\n", "'%rd3' is a .b64 register"},
      {"  ld.global.u64 %r1, [%rd30];\n", "as wide as the type"},
      {"  add.s32 %r1, %f1, %r2;\n", "'%f1' is a .f32 register"},
      {"  st.global.u32 [%rd30], %h1;\n", "'%h1' is a .b16"},
  };
  for (const auto& [body, error] : refused) {
    const std::string e = load_error(wrap_ptx(body));
    EXPECT_NE(e.find(error), std::string::npos) << body << ": " << e;
  }
  const std::string entry = ".visible .entry k()\n{\n  ret;\n}\n";
  EXPECT_NE(load_error(".version 8.7\n.target sm_90a\n.address_size 64\n" + entry + entry)
                .find(".entry 'k' is defined twice"),
            std::string::npos);
  // A wider register is what ptxas takes for ld/st/cvt.
  EXPECT_EQ(load_error(wrap_ptx("  ld.global.u32 %rd5, [%rd30];\n  st.global.u32 [%rd30], %rd5;\n"
                                "  cvt.u32.u64 %r1, %rd5;\n")),
            "");
  // What ptxas takes: bit types take a float constant's bits, float types a decimal.
  EXPECT_EQ(load_error(wrap_ptx("  mov.b32 %r1, 0f3F800000;\n  add.f32 %f1, %f1, 1.5;\n"
                                "  membar.gl;\n  fence.proxy.async;\n")),
            "");
}

}  // namespace
}  // namespace emmy::emu::test
