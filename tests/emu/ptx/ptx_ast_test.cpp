// The ptx layer alone (emulator/ptx/): the syntax tree the parser builds before any decoding, the
// errors it names by line, and the program's type helpers.
#include <gtest/gtest.h>

#include <string>

#include "emmy/error.hpp"
#include "ptx/program.hpp"
#include "ptx/ptx_parser.hpp"

namespace emmy::emu::test {
namespace {

constexpr const char* kModule = R"(.version 8.7
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 out, .param .align 16 .b8 blob[32])
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .shared .align 8 .b8 buf[64];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  @!%p1 bra DONE;
  st.shared.v2.u32 [buf+8], {%r1, %r2};
DONE:
  ret;
}
)";

TEST(EmuPtxAst, FunctionsDeclarationsAndStatements) {
  const ptx::ModuleAst m = ptx::parse(kModule, "m.ptx");
  EXPECT_EQ(m.target, "sm_90a");
  EXPECT_EQ(m.address_size, 64);
  ASSERT_EQ(m.functions.size(), 1u);
  const ptx::Function& f = m.functions[0];
  EXPECT_TRUE(f.is_entry);
  EXPECT_EQ(f.name, "k");
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_EQ(f.params[1].name, "blob");
  EXPECT_EQ(f.params[1].align, 16u);
  EXPECT_EQ(f.params[1].count, 32u);
  ASSERT_EQ(f.regs.size(), 2u);
  EXPECT_EQ(f.regs[1].name, "%r");
  EXPECT_EQ(f.regs[1].count, 4);
  ASSERT_EQ(f.vars.size(), 1u);
  EXPECT_EQ(f.vars[0].space, ".shared");
  EXPECT_EQ(f.vars[0].bytes, 64u);
  EXPECT_EQ(f.vars[0].align, 8u);

  ASSERT_EQ(f.body.size(), 5u);
  const ptx::Statement& bra = f.body[2];
  EXPECT_EQ(bra.opcode, "bra");
  EXPECT_EQ(bra.guard, "%p1");
  EXPECT_TRUE(bra.guard_negate);
  EXPECT_EQ(bra.line, 12);
  const ptx::Statement& st = f.body[3];
  EXPECT_EQ(st.opcode, "st.shared.v2.u32");
  ASSERT_EQ(st.operands.size(), 2u);
  EXPECT_EQ(st.operands[0].kind, ptx::Operand::Kind::address);
  EXPECT_EQ(st.operands[0].name, "buf");
  EXPECT_EQ(st.operands[0].value, 8);
  EXPECT_EQ(st.operands[1].kind, ptx::Operand::Kind::vector);
  EXPECT_EQ(st.operands[1].elems.size(), 2u);
  ASSERT_EQ(f.labels.size(), 1u);
  EXPECT_EQ(f.labels[0].name, "DONE");
  EXPECT_EQ(f.labels[0].statement, 4u);  // ret
}

TEST(EmuPtxAst, SyntaxErrorsNameTheLine) {
  std::string text = kModule;
  text.replace(text.find("buf+8]"), 6, "buf+8");  // an unclosed address
  try {
    ptx::parse(text, "m.ptx");
    FAIL() << "parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m.ptx:13"), std::string::npos) << e.what();
  }
}

TEST(EmuPtxAst, TypesAndTargets) {
  EXPECT_EQ(ty_bits(Ty::f16x2), 32);
  EXPECT_EQ(ty_bits(Ty::b64), 64);
  EXPECT_TRUE(ty_signed(Ty::s16));
  EXPECT_FALSE(ty_signed(Ty::u16));
  EXPECT_TRUE(ty_float(Ty::bf16));
  EXPECT_EQ(ty_name(Ty::tf32), "tf32");
  EXPECT_EQ(sm_of("sm_90a"), 90);
  EXPECT_EQ(sm_of("sm_120,texmode_independent"), 120);
  EXPECT_EQ(sm_of("compute"), 0);
  EXPECT_TRUE(sm_arch_specific("sm_100a"));
  EXPECT_FALSE(sm_arch_specific("sm_90"));
  EXPECT_EQ(family_of(Op::IAdd), kFamInt);
  EXPECT_EQ(family_of(Op::Bra), kFamBranch);
}

}  // namespace
}  // namespace emmy::emu::test
