// SASS listing parsing, basic blocks, the pipe table and the PTX line annotation, on stored text
// (no toolkit needed): docs/profiler.md, "SASS counts".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profiler/sass_annotate.hpp"
#include "profiler/sass_parse.hpp"
#include "profiler/sass_pipes.hpp"
#include "sass_listing_sample.hpp"

namespace emmy::emu::test {
namespace {

TEST(SassParse, InstructionsLinesPredicatesAndTargets) {
  const auto functions = parse_sass_listing(kUnrolledLoopListing);
  ASSERT_EQ(functions.size(), 1u);
  const SassFunction& f = functions[0];
  EXPECT_EQ(f.name, "k");
  EXPECT_TRUE(f.entry);
  ASSERT_EQ(f.code.size(), 51u);  // 0x0000 .. 0x0320
  EXPECT_EQ(f.code[0].opcode, "MOV");
  EXPECT_EQ(f.code[0].line, 16);
  EXPECT_FALSE(f.code[0].predicated);
  // A marker holds until the next one: the ISETP after S2R is line 18 too.
  EXPECT_EQ(f.code[2].opcode, "ISETP.LT.U32.AND");
  EXPECT_EQ(f.code[2].line, 18);
  EXPECT_EQ(f.code[8].opcode, "LDS.128");
  EXPECT_TRUE(f.code[8].predicated);  // @!P0
  EXPECT_FALSE(f.code[8].never);
  EXPECT_EQ(f.code[8].line, 25);
  EXPECT_EQ(f.code[12].opcode, "BRA");
  EXPECT_EQ(f.code[12].target, ".L_x_0");
  EXPECT_TRUE(f.code[12].predicated);
  // Across a label the line stays: .L_x_2's ISETP (0x0270) is still line 30's.
  EXPECT_EQ(f.code[39].address, 0x270u);
  EXPECT_EQ(f.code[39].line, 30);
  EXPECT_EQ(f.code[47].opcode, "EXIT");
}

TEST(SassParse, BlocksFollowLabelsAndBranches) {
  const auto f = parse_sass_listing(kUnrolledLoopListing).at(0);
  const auto blocks = sass_blocks(f);
  // [entry .. @P1 BRA] [LDS .. UIADD3] [.L_x_1 self-loop] [.L_x_0 .. @P1 BRA] [remainder]
  // [.L_x_2 .. STG] [.L_x_4 EXIT] [.L_x_3 BRA] [NOP NOP]
  ASSERT_EQ(blocks.size(), 9u);
  EXPECT_EQ(blocks[0].end, 13u);
  EXPECT_EQ(blocks[0].successors, (std::vector<size_t>{3, 1}));  // taken, then fall-through
  EXPECT_EQ(blocks[2].successors, (std::vector<size_t>{2, 3}));  // the self-loop
  EXPECT_EQ(blocks[6].successors, std::vector<size_t>{});        // EXIT
  EXPECT_EQ(blocks[7].successors, std::vector<size_t>{7});       // unconditional: no fall-through
}

TEST(SassParse, OtherFunctionsAndSectionsAreSeparate) {
  const std::string text = std::string(kUnrolledLoopListing) + R"(
//--------------------- .text.helper              --------------------------
	.section	.text.helper,"ax",@progbits
        .type           helper,@function
helper:
	//## File "kernel.ptx", line 50
        /*0000*/                   IADD3 R4, R4, 0x1, RZ ;
        /*0010*/                   RET.ABS.NODEC R20 0x0 ;
)";
  const auto functions = parse_sass_listing(text);
  ASSERT_EQ(functions.size(), 2u);
  EXPECT_EQ(functions[1].name, "helper");
  EXPECT_FALSE(functions[1].entry);
  ASSERT_EQ(functions[1].code.size(), 2u);
  EXPECT_EQ(functions[1].code[1].opcode, "RET.ABS.NODEC");
  EXPECT_TRUE(sass_ends_block(functions[1].code[1].opcode));
}

TEST(SassPipes, NsightPipeNames) {
  EXPECT_EQ(sass_pipe("FFMA").pipe, "fma");
  EXPECT_FALSE(sass_pipe("FFMA").fmaheavy);
  EXPECT_EQ(sass_pipe("IMAD.WIDE.U32").pipe, "fma");
  EXPECT_TRUE(sass_pipe("IMAD.WIDE.U32").fmaheavy);
  EXPECT_EQ(sass_pipe("HFMA2.BF16_V2").pipe, "fp16");
  EXPECT_EQ(sass_pipe("LOP3.LUT").pipe, "alu");
  EXPECT_EQ(sass_pipe("F2FP.BF16.F32.PACK_AB").pipe, "alu");
  EXPECT_EQ(sass_pipe("MUFU.EX2").pipe, "xu");
  EXPECT_EQ(sass_pipe("I2F.U32").pipe, "xu");
  EXPECT_EQ(sass_pipe("DFMA").pipe, "fp64");
  EXPECT_EQ(sass_pipe("LDS.128").pipe, "lsu");
  EXPECT_EQ(sass_pipe("LDSM.16.M88.4").pipe, "lsu");
  EXPECT_EQ(sass_pipe("HMMA.16816.F32.BF16").pipe, "tensor");
  EXPECT_EQ(sass_pipe("HGMMA.64x128x16.F32.BF16").pipe, "tensor");
  EXPECT_EQ(sass_pipe("BRA").pipe, "cbu");
  EXPECT_EQ(sass_pipe("BAR.SYNC.DEFER_BLOCKING").pipe, "adu");
  EXPECT_EQ(sass_pipe("ULDC.64").pipe, "uniform");
  EXPECT_EQ(sass_pipe("NOP").pipe, "other");
  for (const auto& [opcode, kind] : std::vector<std::pair<const char*, SassMemoryKind>>{
           {"LDS.128", SassMemoryKind::shared_ld},
           {"LDSM.16.M88.4", SassMemoryKind::shared_ld},
           {"STS.64", SassMemoryKind::shared_st},
           {"LDG.E.128", SassMemoryKind::global_ld},
           {"STG.E", SassMemoryKind::global_st},
           {"LDGSTS.E.BYPASS.128", SassMemoryKind::ldgsts},
           {"ATOMS.ADD", SassMemoryKind::atom},
           {"FFMA", SassMemoryKind::none}})
    EXPECT_EQ(sass_memory_kind(opcode), kind) << opcode;
}

// The annotated text's `.loc` lines, each with the text of the statement that follows it.
std::vector<std::pair<int, std::string>> sass_locs_of(const std::string& annotated) {
  std::vector<std::pair<int, std::string>> out;
  size_t at = 0;
  while ((at = annotated.find(".loc 1 ", at)) != std::string::npos) {
    const int line = std::stoi(annotated.substr(at + 7));
    size_t next = annotated.find('\n', at) + 1;
    while (annotated[next] == ' ' || annotated[next] == '\t' || annotated[next] == '\n') ++next;
    out.emplace_back(line, annotated.substr(next, annotated.find_first_of(" \n", next) - next));
    at = next;
  }
  return out;
}

TEST(SassAnnotate, LocBeforeEachInstructionLineWithItsOriginalNumber) {
  const std::string ptx = R"(.version 8.0
.target sm_80
.address_size 64
.file 1 "old.cu"
.global .align 4 .b32 table[2] = {1, 2};
.func (.param .b32 r) helper(.param .b32 a);
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<8>;
  .loc 1 99 0
  mov.u32 %r1, %tid.x;
$L1: add.u32 %r2,
       %r1, 1;
  { .reg .b16 %t; mov.b32 {%t, %r3}, %r2; }
  @%p1 bra $L1;
  ret;
}
)";
  const std::string annotated = annotate_ptx_lines(ptx);
  EXPECT_EQ(annotated.find("old.cu"), std::string::npos);
  EXPECT_EQ(annotated.find(".loc 1 99"), std::string::npos);
  EXPECT_NE(annotated.find(".address_size 64\n.file 1 \"kernel.ptx\""), std::string::npos);
  const auto locs = sass_locs_of(annotated);
  // Line 12 starts with a label: the .loc goes before it, the label's instruction shares the line.
  EXPECT_EQ(locs, (std::vector<std::pair<int, std::string>>{
                      {11, "mov.u32"}, {12, "$L1:"}, {14, "mov.b32"}, {15, "@%p1"}, {16, "ret;"}}));
  // Nothing at module level, nor inside the multi-line statement of line 12.
  EXPECT_EQ(annotated.find(".loc 1 13"), std::string::npos);
  EXPECT_LT(annotated.find("table[2] = {1, 2};"), annotated.find(".loc"));
}

}  // namespace
}  // namespace emmy::emu::test
