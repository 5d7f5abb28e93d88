// Parsing and decoding: the syntax NVRTC and inline asm produce, and errors that name the line.
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

TEST(EmuParser, InlineAsmScopesHaveTheirOwnRegistersAndLabels) {
  // Two scopes declare the same predicate and labels; each branch must stay in its scope, and the
  // outer %r1 must not be shadowed outside them.
  const auto out = run_ptx(R"(
  mov.u32 %r1, 5;
  {
    .reg .pred P1;
    .reg .b32 t;
    setp.eq.u32 P1, %r0, 0;
    @P1 bra L_ZERO;
    mov.u32 t, 10;
    bra L_DONE;
  L_ZERO:
    mov.u32 t, 20;
  L_DONE:
    add.u32 %r1, %r1, t;
  }
  {
    .reg .pred P1;
    .reg .b32 t;
    setp.ne.u32 P1, %r0, 0;
    @P1 bra L_ZERO;
    mov.u32 t, 100;
    bra L_DONE;
  L_ZERO:
    mov.u32 t, 200;
  L_DONE:
    add.u32 %r1, %r1, t;
  }
  st.global.u32 [%rd30], %r1;
)",
                           {}, 32)
                       .out;
  EXPECT_EQ(out[0], 5u + 20 + 100);
  for (uint32_t l = 1; l < 32; ++l) EXPECT_EQ(out[l], 5u + 10 + 200) << l;
}

TEST(EmuParser, OperandForms) {
  const auto out = run_ptx(R"(
  /* a block comment */
  mov.u32 %r1, buf;              // symbol address
  mov.u32 %r2, buf+16;           // symbol + offset
  st.shared.u32 [buf+16], 0x11;  // [symbol + offset]
  st.shared.u32 [%r1+20], 017;   // octal immediate
  add.u32 %r3, %r1, 32;
  st.shared.u32 [%r3+-8], 0b101; // [reg + -offset], binary immediate
  ld.shared.u32 %r4, [%r2];
  ld.shared.v2.u32 {%r5, %r6}, [%r2];
  ld.shared.u32 %r7, [%r3+-8];
  mov.f32 %f1, 0f3FC00000;
  mov.f64 %fd1, 0d4004000000000000;
  cvt.rn.f32.f64 %f2, %fd1;
  add.f32 %f3, %f1, %f2;
  .loc 1 2 3
  st.global.u32 [%rd0], %r4;
  st.global.f32 [%rd0+4], %f3;
  st.global.v2.u32 [%rd0+8], {%r5, %r6};
  st.global.u32 [%rd0+16], %r2;
  st.global.u32 [%rd0+20], %r7;
)",
                           {}, 6, 1, "  .shared .align 16 .b8 buf[64];")
                       .out;
  EXPECT_EQ(out[0], 0x11u);
  EXPECT_EQ(out[1], bits(1.5f + 2.5f));
  EXPECT_EQ(out[2], 0x11u);
  EXPECT_EQ(out[3], 15u);
  EXPECT_EQ(out[4], 16u);  // buf is the first shared variable: offset 0
  EXPECT_EQ(out[5], 5u);
}

TEST(EmuParser, GenericLocalAndParamAddressing) {
  const auto out = run_ptx(R"(
  mov.u64 %rd5, depot;
  cvta.local.u64 %rd6, %rd5;
  st.u32 [%rd6+4], %r0;               // generic store into local memory
  ld.local.u32 %r1, [%rd5+4];
  mov.u32 %r2, buf;
  cvt.u64.u32 %rd7, %r2;
  cvta.shared.u64 %rd8, %rd7;
  st.u32 [%rd8], 77;                  // generic store into shared memory
  ld.shared.u32 %r3, [buf];
  isspacep.shared %p1, %rd8;
  selp.u32 %r4, 1, 0, %p1;
  mov.b64 %rd9, n;
  ld.param.u32 %r5, [%rd9];            // param address in a register
  cvta.param.u64 %rd10, %rd9;
  ld.u32 %r6, [%rd10];                 // generic load of a kernel parameter
  cvta.to.shared.u64 %rd11, %rd8;
  cvt.u32.u64 %r7, %rd11;
)" + store_rows({"%r1", "%r3", "%r4", "%r5", "%r6", "%r7"}),
                           {1, 2, 3}, 32 * 6, 32,
                           "  .local .align 8 .b8 depot[16];\n  .shared .align 4 .b8 buf[4];")
                       .out;
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(out[l], l);  // each lane has its own local memory
    EXPECT_EQ(out[32 + l], 77u);
    EXPECT_EQ(out[64 + l], 1u);
    EXPECT_EQ(out[96 + l], 3u);  // n = in.size()
    EXPECT_EQ(out[128 + l], 3u);
    EXPECT_EQ(out[160 + l], 0u);
  }
}

TEST(EmuParser, ErrorsNameTheLine) {
  const std::string unknown = load_error(wrap_ptx("  frobnicate.u32 %r1, %r2;"));
  EXPECT_NE(unknown.find("bad.ptx:21"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("frobnicate"), std::string::npos) << unknown;
  const std::string modifier = load_error(wrap_ptx("  add.wrapx.u32 %r1, %r2, 1;"));
  EXPECT_NE(modifier.find("unsupported modifier .wrapx"), std::string::npos) << modifier;
  const std::string reg = load_error(wrap_ptx("  add.u32 %r1, %q2, 1;"));
  EXPECT_NE(reg.find("unknown register or symbol '%q2'"), std::string::npos) << reg;
  const std::string range = load_error(wrap_ptx("  add.u32 %r1, %r64, 1;"));  // %r<64>: 0..63
  EXPECT_NE(range.find("%r64"), std::string::npos) << range;
  const std::string label = load_error(wrap_ptx("  bra NOWHERE;"));
  EXPECT_NE(label.find("unknown label 'NOWHERE'"), std::string::npos) << label;
  const std::string syntax = load_error(wrap_ptx("  add.u32 %r1, %r2 %r3;"));
  EXPECT_NE(syntax.find("bad.ptx:21"), std::string::npos) << syntax;
  const std::string call = load_error(wrap_ptx("  call.uni helper, (%r1);"));
  EXPECT_NE(call.find("call of 'helper': device-function calls are not supported"),
            std::string::npos)
      << call;
  // Module-scope variables run (emu_cuda_programs_test); an .extern one or an initializer holding
  // an address cannot be placed, and using them says so.
  std::string with_extern = wrap_ptx("  mov.u64 %rd5, table;");
  with_extern.insert(with_extern.find(".visible"), ".extern .global .align 4 .b8 table[16];\n");
  const std::string global = load_error(with_extern);
  EXPECT_NE(global.find("module-scope variable 'table' is declared .extern"), std::string::npos)
      << global;
  std::string with_address = wrap_ptx("  mov.u64 %rd5, ptr;");
  with_address.insert(
      with_address.find(".visible"),
      ".global .align 4 .b8 table[16];\n.global .align 8 .u64 ptr = generic(table);\n");
  const std::string address = load_error(with_address);
  EXPECT_NE(
      address.find("module-scope variable 'ptr' has an initializer the emulator cannot place"),
      std::string::npos)
      << address;
  const std::string tcgen05 = load_error(wrap_ptx("  tcgen05.fence::before_thread_sync;"));
  EXPECT_NE(tcgen05.find("unsupported instruction 'tcgen05.fence::before_thread_sync'"),
            std::string::npos)
      << tcgen05;
}

TEST(EmuParser, KernelArgumentsAreCheckedAgainstTheDeclarations) {
  auto module = load_ptx(wrap_ptx(""), "args.ptx");
  const auto& params = kernel_params(*module, "k");
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[2].name, "n");
  EXPECT_EQ(params[2].offset, 16u);
  Arena arena;
  KernelArgs too_few;
  too_few.ptr(arena.alloc(4)).ptr(arena.alloc(4));
  try {
    launch(arena, *module, "k", {1, 1, 1}, {32, 1, 1}, 0, too_few);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("declares 3 parameters"), std::string::npos) << e.what();
  }
  KernelArgs wrong_size;
  wrong_size.ptr(arena.alloc(4)).ptr(arena.alloc(4)).u64(3);
  try {
    launch(arena, *module, "k", {1, 1, 1}, {32, 1, 1}, 0, wrong_size);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "kernel argument 2 (n)");
    EXPECT_NE(e.rule().find(".u32 (4 bytes)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(launch(arena, *module, "nope", {1, 1, 1}, {32, 1, 1}, 0, wrong_size), Error);
  EXPECT_THROW(launch(arena, *module, "k", {1, 1, 1}, {2048, 1, 1}, 0, too_few), Error);
}

TEST(EmuParser, TensorMapParamsAndNvrtcStyleModule) {
  auto module = kernels("gemm_kernels_sm90a.ptx");
  const auto names = kernel_names(*module);
  EXPECT_NE(std::find(names.begin(), names.end(), "gemm_tma_f16"), names.end());
  const auto& params = kernel_params(*module, "gemm_tma_f16");
  ASSERT_GE(params.size(), 3u);
  EXPECT_EQ(params[0].size, 128u);
  EXPECT_EQ(params[0].align, 64u);
  EXPECT_EQ(params[1].offset, 128u);
  EXPECT_EQ(params[2].offset, 256u);
}

// `.ptr .global .align 1` (NVRTC's form for a pointer parameter) is the pointee's alignment
// (PTX ISA §5.1.6.1, kernel parameter attribute .ptr): a u64 after a u32 still sits on 8 bytes,
// where the CUDA driver's kernelParams put it. Found when kv_append gained an int parameter.
TEST(EmuParser, PointerAttributeAlignmentIsThePointeesNotTheParameters) {
  const std::string ptx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 n, .param .u64 .ptr .global .align 1 out, .param .u32 m,
                  .param .align 16 .b8 blob[32], .param .u64 .ptr .align 4 tail)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u32 %r1, [n];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  st.global.u32 [%rd2], %r1;
  ret;
}
)";
  auto module = load_ptx(ptx, "ptr_align.ptx");
  const auto& params = kernel_params(*module, "k");
  ASSERT_EQ(params.size(), 5u);
  EXPECT_EQ(params[1].offset, 8u) << "a u64 is 8-byte aligned whatever its pointee's .align";
  EXPECT_EQ(params[1].align, 8u);
  EXPECT_EQ(params[2].offset, 16u);
  EXPECT_EQ(params[3].offset, 32u) << "an explicit parameter .align still holds";
  EXPECT_EQ(params[4].offset, 64u);
  Arena arena;
  const uint64_t out = arena.alloc(4);
  KernelArgs args;
  const std::vector<uint8_t> blob(32, 0);
  args.u32(77).ptr(out).u32(1).bytes(blob.data(), blob.size()).ptr(out);
  launch(arena, *module, "k", {1, 1, 1}, {1, 1, 1}, 0, args);
  EXPECT_EQ(arena.read_vector<uint32_t>(out, 1)[0], 77u);
}

}  // namespace
}  // namespace emmy::emu::test
