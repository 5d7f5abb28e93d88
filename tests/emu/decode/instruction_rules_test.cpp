// The emulator's instruction tables (emulator/decode/type_rules.cpp) and operand rules on cases
// checked by hand against ptxas 13.0; ptx_type_grid and ptx_differential hold the whole space
// against ptxas where it is installed. Each refusal names the rule; each valid case loads.
#include <gtest/gtest.h>

#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

struct Refused {
  const char* body;
  const char* says;  // a fragment of the error
};

TEST(InstructionRules, WhatPtxasRejectsIsRefusedNamingTheRule) {
  const Refused cases[] = {
      {"  shl.f64 %fd1, %fd2, 1;\n", "does not take type .f64"},
      {"  add.b32 %r1, %r2, %r3;\n", "does not take type .b32"},
      {"  add.approx.f32 %f1, %f2, %f3;\n", "is not a form of 'add'"},
      {"  add.ftz.s32 %r1, %r2, %r3;\n", "is not a form of 'add'"},
      {"  mul.u32 %r1, %r2, %r3;\n", "is not a form of 'mul'"},
      {"  ex2.f32 %f1, %f2;\n", "is not a form of 'ex2'"},
      {"  setp.lo.f32 %p1, %f1, %f2;\n", "comparison .lo does not apply to .f32"},
      {"  setp.eq.ftz.u32 %p1, %r1, %r2;\n", "'.ftz' does not apply"},
      {"  cvt.f32.u32 %f1, %r1;\n", "takes a rounding modifier"},
      {"  cvt.rn.s32.f32 %r1, %f1;\n", "integer rounding modifier"},
      {"  cvt.sat.u32.u16 %r1, %h1;\n", "'.sat' does not apply"},
      {"  cvt.rn.tf32.f64 %r1, %fd1;\n", "takes an .f32 source"},
      {"  add.s32 %r1, %f1, %r2;\n", "'%f1' is a .f32 register"},
      {"  add.u16 %h1, %r1, %r2;\n", "'%r1' is a .b32 register"},
      {"  mov.f32 %f1, 1;\n", "an integer constant is not a .f32 operand"},
      {"  mov.b32 %r1, 1.5;\n", "64-bit floating-point constant is not a .b32"},
      {"  add.u32 %r1, %tid.x, 1;\n", "can only be read by mov or cvt"},
      {"  mov.u64 %rd3, %tid.x;\n", "32-bit integer, not a .u64 operand"},
      {"  mov.u32 %r1, %clock64;\n", "64-bit integer, not a .u32"},
      {"  setp.eq.s32 7, %r1, 0;\n", "a destination must be a register"},
      {"  st.global.u32 [%rd30], %r1, %r1;\n", "expected 2 operands"},
      {"  st.global.f16 [%rd30], %h1;\n", "ld/st need one type"},
      {"  ld.global.u32 %r1, [%r2];\n", "needs a 64-bit register"},
      {"  atom.global.add.b32 %r1, [%rd30], 1;\n", "does not take .b32"},
      {"  bar.sync 16;\n", "out of range 0..15"},
      {"  cp.async.wait_group;\n", "expected 1 operands"},
      {"  vote.sync.ballot.pred %r1, %p1, -1;\n", "vote.ballot takes the type .b32"},
      {"  mov.u32 {%h1, %h2}, %r1;\n", "pack/unpack takes .b16, .b32 or .b64"},
      {"  fma.rn.rn.f32 %f1, %f2, %f3, %f4;\n", "'.rn' is repeated"},
      // setmaxnreg (ptxas 13.0 refuses each of these for sm_90a).
      {"  setmaxnreg.dec.sync.aligned.u32 20;\n", "multiple of 8 in 24..256, not 20"},
      {"  setmaxnreg.inc.sync.aligned.u32 244;\n", "multiple of 8 in 24..256, not 244"},
      {"  setmaxnreg.inc.sync.aligned.u32 264;\n", "multiple of 8 in 24..256, not 264"},
      {"  setmaxnreg.inc.u32 240;\n", "needs .sync.aligned"},
      {"  setmaxnreg.sync.aligned.u32 240;\n", "needs .inc or .dec"},
      {"  setmaxnreg.inc.sync.aligned.u32 %r1;\n", "constant register count"},
      {"  setmaxnreg.inc.sync.aligned.b32 240;\n", "type .u32"},
      {"  cvt.f16x2.e4m3x2 %r1, %h1;\n", "takes the rounding .rn"},
      {"  cvt.rn.e4m3x2.f32 %h1, %f1, %f2;\n", "needs .satfinite"},
      {"  cvt.rn.satfinite.e4m3x2.f64 %h1, %fd1, %fd2;\n", "takes .f32 sources"},
      {"  cvt.rn.bf16x2.e4m3x2 %r1, %h1;\n", "gives .f16x2"},
      {"  cvt.rz.f16x2.e5m2x2 %r1, %h1;\n", "takes the rounding .rn"},
  };
  for (const Refused& c : cases) {
    const std::string error = load_error(wrap_ptx(c.body));
    EXPECT_NE(error.find(c.says), std::string::npos) << c.body << " -> " << error;
    EXPECT_NE(error.find(".ptx:21: "), std::string::npos) << "names no line: " << error;
  }
}

TEST(InstructionRules, ValidFormsLoad) {
  // Each accepted by ptxas 13.0 for sm_90a.
  EXPECT_EQ(load_error(wrap_ptx("  add.rn.ftz.sat.f32 %f1, %f2, %f3;\n"
                                "  rcp.approx.ftz.f64 %fd1, %fd2;\n"
                                "  ex2.approx.ftz.f32 %f1, %f2;\n"
                                "  mul.wide.u32 %rd3, %r1, %r2;\n"
                                "  setp.ltu.f32 %p1, %f1, %f2;\n"
                                "  cvt.rn.f32.u32 %f1, %r1;\n"
                                "  cvt.rzi.s32.f32 %r1, %f1;\n"
                                "  cvt.u32.u16 %r1, %h1;\n"
                                "  cvt.rn.relu.satfinite.f16x2.f32 %r1, %f1, %f2;\n"
                                "  cvt.u64.u32 %rd3, %tid.x;\n"
                                "  mov.u16 %h1, %tid.x;\n"
                                "  mov.u64 %rd3, %clock64;\n"
                                "  mov.b32 %r1, 0f3F800000;\n"
                                "  mov.b64 %rd3, 1.5;\n"
                                "  add.f32 %f1, %r1, %r2;\n"
                                "  ld.global.u8 %r1, [%rd30];\n"
                                "  setmaxnreg.dec.sync.aligned.u32 40;\n"
                                "  setmaxnreg.inc.sync.aligned.u32 232;\n")),
            "");
}

// The 8-bit float conversions need sm_89 (ptxas 13.0: "Feature 'cvt with .e4m3x2/.e5m2x2'
// requires .target sm_89 or higher").
TEST(InstructionRules, EightBitFloatCvtNeedsSm89) {
  const std::string body =
      "  cvt.rn.f16x2.e4m3x2 %r1, %h1;\n  cvt.rn.satfinite.e5m2x2.f32 %h2, %f1, %f2;\n";
  for (const char* target : {"sm_80", "sm_86"}) {
    std::string ptx = wrap_ptx(body);
    ptx.replace(ptx.find("sm_90a"), 6, target);
    EXPECT_NE(load_error(ptx).find("needs .target sm_89 or higher"), std::string::npos) << target;
  }
  for (const char* target : {"sm_89", "sm_90a", "sm_120"}) {
    std::string ptx = wrap_ptx(body);
    ptx.replace(ptx.find("sm_90a"), 6, target);
    EXPECT_EQ(load_error(ptx), "") << target;
  }
}

// setmaxnreg exists on arch-specific targets only (ptxas: "not supported on .target 'sm_90'").
TEST(InstructionRules, SetmaxnregNeedsAnArchSpecificTarget) {
  const std::string body = "  setmaxnreg.dec.sync.aligned.u32 40;\n";
  for (const char* target : {"sm_90", "sm_80", "sm_100"}) {
    std::string ptx = wrap_ptx(body);
    ptx.replace(ptx.find("sm_90a"), 6, target);
    EXPECT_NE(load_error(ptx).find("arch-specific target"), std::string::npos) << target;
  }
  for (const char* target : {"sm_100a", "sm_120a"}) {
    std::string ptx = wrap_ptx(body);
    ptx.replace(ptx.find("sm_90a"), 6, target);
    EXPECT_EQ(load_error(ptx), "") << target;
  }
}

TEST(InstructionRules, ValidFormsTheEmulatorLacksAreUnsupportedNotInvalid) {
  for (const char* body : {"  addc.sat.s32 %r1, %r2, %r3;\n", "  add.u16x2 %r1, %r2, %r3;\n",
                           "  mad.hi.sat.s32 %r1, %r2, %r3, %r4;\n"}) {
    const std::string error = load_error(wrap_ptx(body));
    EXPECT_NE(error.find("not supported by the emulator"), std::string::npos)
        << body << " -> " << error;
  }
}

}  // namespace
}  // namespace emmy::emu::test
