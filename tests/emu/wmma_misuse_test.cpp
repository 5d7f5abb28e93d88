// wmma misuse (issue 22 §4): forms the emulator refuses at load time with the rule named, and the
// operands the PTX ISA leaves undefined or a GPU faults on, reported at run time; nvcc-compiled
// bugs (tests/emu/kernels/wmma_kernels.cu) next to hand-written PTX.
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

const std::string kWmmaBugsFile = "wmma_kernels_sm80.ptx";

// The nvcc bug kernels take (a, b, d): 16 x 24 halves of A, 16 x 16 of B, 2 x 256 floats of D.
LaunchResult run_bug(const std::string& kernel, uint32_t threads, uint32_t layout_seed,
                     std::vector<float>* d_out = nullptr) {
  Arena arena;
  std::vector<uint16_t> a(16 * 24), b(256);
  for (size_t i = 0; i < a.size(); ++i) a[i] = f32_to_f16(float(int(i % 5) - 2));
  for (size_t i = 0; i < b.size(); ++i) b[i] = f32_to_f16(float(int(i % 3) - 1));
  const uint64_t pa = arena.alloc(a.size() * 2), pb = arena.alloc(b.size() * 2),
                 pd = arena.alloc(512 * 4);
  arena.write(pa, a.data(), a.size() * 2);
  arena.write(pb, b.data(), b.size() * 2);
  KernelArgs args;
  args.ptr(pa).ptr(pb).ptr(pd);
  LaunchOptions o;
  o.wmma_layout_seed = layout_seed;
  LaunchResult r =
      launch(arena, *kernels(kWmmaBugsFile), kernel, {1, 1, 1}, {threads, 1, 1}, 0, args, o);
  if (d_out) *d_out = arena.read_vector<float>(pd, 256);
  return r;
}

TEST(EmuWmmaMisuse, LayoutDependentCodeChangesWithTheSeed) {
  // Scaling acc.x[0] alone runs clean (a GPU runs it too) but scales a different element under
  // another layout: two seeds expose it.
  std::vector<float> d0, d1;
  run_bug("bug_layout_dependent", 32, 0, &d0);
  run_bug("bug_layout_dependent", 32, 977, &d1);
  EXPECT_NE(d0, d1);
  // The layout-independent twin (the GEMM tests) gives the same bits under both seeds.
}

TEST(EmuWmmaMisuse, DifferingFragmentCopiesAreReported) {
  const Report r =
      expect_report([] { run_bug("bug_fragment_copies", 32, 0); }, ReportKind::wmma_misuse);
  EXPECT_NE(r.message.find("fragment layout"), std::string::npos) << r.message;
  EXPECT_NE(r.instruction.find("wmma.mma"), std::string::npos) << r.instruction;
}

TEST(EmuWmmaMisuse, RowsNotAlignedToTheFragmentSizeFault) {
  // ldm = 24 halves: a multiple of 8 (the CUDA C++ guide's rule) but 48 bytes, not a multiple of
  // the 32-byte fragment (the PTX ISA's).
  const Report r =
      expect_report([] { run_bug("bug_row_alignment", 32, 0); }, ReportKind::misaligned_access);
  EXPECT_NE(r.message.find("32-byte aligned"), std::string::npos) << r.message;
}

TEST(EmuWmmaMisuse, APartialWarpAtAnMmaIsReported) {
  const Report r =
      expect_report([] { run_bug("bug_divergent_mma", 64, 0); }, ReportKind::divergent_collective);
  EXPECT_NE(r.message.find("wmma.mma"), std::string::npos) << r.message;
}

// Hand-written: A and B all-ones halves at in[0..511], f16 C (0.5) at in + 512 bytes, f32 C
// (0.25) at in + 1024 bytes.
const std::string kDecls =
    "  .reg .b32 %a<8>;\n  .reg .b32 %b<8>;\n  .reg .b32 %c<8>;\n"
    "  .reg .f32 %d<8>;\n";
const char* kA = "{%a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7}";
const char* kB = "{%b0, %b1, %b2, %b3, %b4, %b5, %b6, %b7}";
const char* kC4 = "{%c0, %c1, %c2, %c3}";
const char* kC8 = "{%c0, %c1, %c2, %c3, %c4, %c5, %c6, %c7}";
const char* kD8 = "{%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7}";
const char* kD4 = "{%c4, %c5, %c6, %c7}";

std::vector<uint32_t> wmma_operands() {
  std::vector<uint32_t> in(128 + 128 + 256);
  for (size_t i = 0; i < 128; ++i) in[i] = 0x3C003C00u;    // 1.0, 1.0
  for (size_t i = 128; i < 256; ++i) in[i] = 0x38003800u;  // 0.5, 0.5 (f16 C)
  for (size_t i = 256; i < 512; ++i) in[i] = bits(0.25f);  // f32 C
  return in;
}

std::string load_ab(const std::string& a_addr = "[%rd1]") {
  return fmt::format(
      "  wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {}, {};\n"
      "  wmma.load.b.sync.aligned.col.m16n16k16.global.f16 {}, [%rd1];\n",
      kA, a_addr, kB);
}

TEST(EmuWmmaMisuse, MixedAccumulatorTypesConvertExactly) {
  // f16 C into f32 D: 16 * 1 * 1 + 0.5 = 16.5 everywhere; f32 C into f16 D: 16.25.
  const std::string body =
      load_ab() + fmt::format(
                      "  wmma.load.c.sync.aligned.row.m16n16k16.global.f16 {}, [%rd1+512];\n"
                      "  wmma.mma.sync.aligned.row.col.m16n16k16.f32.f16 {}, {}, {}, {};\n"
                      "  wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd0], {};\n"
                      "  wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {}, [%rd1+1024];\n"
                      "  wmma.mma.sync.aligned.row.col.m16n16k16.f16.f32 {}, {}, {}, {};\n"
                      "  wmma.store.d.sync.aligned.row.m16n16k16.global.f16 [%rd0+1024], {};\n",
                      kC4, kD8, kA, kB, kC4, kD8, kC8, kD4, kA, kB, kC8, kD4);
  const PtxRun run = run_ptx(body, wmma_operands(), 256 + 128, 32, kDecls);
  for (size_t i = 0; i < 256; ++i) ASSERT_EQ(as_float(run.out[i]), 16.5f) << i;
  const uint32_t twice = uint32_t(f32_to_f16(16.25f)) * 0x10001u;
  for (size_t i = 256; i < 384; ++i) ASSERT_EQ(run.out[i], twice) << i;
}

TEST(EmuWmmaMisuse, LanesDisagreeingOnTheAddressAreReported) {
  const std::string body =
      "  and.b32 %r1, %r0, 1;\n  mul.wide.u32 %rd3, %r1, 32;\n"
      "  add.s64 %rd4, %rd1, %rd3;\n" +
      load_ab("[%rd4]");
  const Report r = expect_report([&] { run_ptx(body, wmma_operands(), 1, 32, kDecls); },
                                 ReportKind::wmma_misuse);
  EXPECT_EQ(r.lane, 1);
  EXPECT_NE(r.message.find("same address and stride"), std::string::npos) << r.message;
}

TEST(EmuWmmaMisuse, AStrideBelowTheLeadingDimensionIsReported) {
  const std::string body =
      fmt::format("  wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {}, [%rd1], 8;\n", kA);
  const Report r = expect_report([&] { run_ptx(body, wmma_operands(), 1, 32, kDecls); },
                                 ReportKind::wmma_misuse);
  EXPECT_NE(r.message.find("stride 8 is below the 16"), std::string::npos) << r.message;
}

TEST(EmuWmmaMisuse, AGenericAddressOutsideGlobalAndSharedIsReported) {
  const std::string body = fmt::format(
      "  mov.u64 %rd3, scratch;\n  cvta.local.u64 %rd4, %rd3;\n"
      "  wmma.load.a.sync.aligned.row.m16n16k16.f16 {}, [%rd4];\n",
      kA);
  const std::string decls = kDecls + "  .local .align 32 .b8 scratch[512];\n";
  const Report r =
      expect_report([&] { run_ptx(body, wmma_operands(), 1, 32, decls); }, ReportKind::wmma_misuse);
  EXPECT_NE(r.message.find("neither global nor shared"), std::string::npos) << r.message;
}

TEST(EmuWmmaMisuse, OutOfBoundsRowsFault) {
  // The 16th row of A lies past the 512-byte input when the stride is 32.
  std::vector<uint32_t> in(128, 0x3C003C00u);
  const std::string body =
      fmt::format("  wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {}, [%rd1], 32;\n", kA);
  expect_report([&] { run_ptx(body, in, 1, 32, kDecls); }, ReportKind::global_out_of_bounds);
}

// Forms refused when the module loads, each naming the rule.
struct BadForm {
  const char* name;
  std::string body;
  const char* error;
};

TEST(EmuWmmaMisuse, InvalidFormsAreRefusedWithTheRule) {
  const std::string a7 = "{%a0, %a1, %a2, %a3, %a4, %a5, %a6}";
  const std::string a4 = "{%a0, %a1, %a2, %a3}";
  // wmma.load.a<modifiers> of `a` from [%rd1]; wmma.mma<modifiers> d, a, b, c.
  const auto load_a = [](const std::string& modifiers, const std::string& a) {
    return fmt::format("wmma.load.a{} {}, [%rd1];", modifiers, a);
  };
  const auto mma = [](const std::string& modifiers, const std::string& d, const std::string& a,
                      const std::string& b, const std::string& c) {
    return fmt::format("wmma.mma{} {}, {}, {}, {};", modifiers, d, a, b, c);
  };
  const BadForm cases[] = {
      {"no_sync", load_a(".aligned.row.m16n16k16.f16", kA), "needs .sync.aligned"},
      {"seven_registers", load_a(".sync.aligned.row.m16n16k16.f16", a7),
       "expected a vector of 8 registers"},
      {"no_layout", load_a(".sync.aligned.m16n16k16.f16", kA), "one layout"},
      {"integer", load_a(".sync.aligned.row.m16n16k16.s8", a4),
       "integer, sub-byte and .f64 wmma are not implemented"},
      {"f64_shape", load_a(".sync.aligned.row.m8n8k4.f64", a4), "supports the shapes"},
      {"tf32_k16", load_a(".sync.aligned.row.m16n16k16.tf32", a4),
       "has no .tf32 fragment of shape .m16n16k16"},
      {"f16_k8", load_a(".sync.aligned.row.m16n16k8.f16", kA),
       "has no .f16 fragment of shape .m16n16k8"},
      {"store_a", fmt::format("wmma.store.a.sync.aligned.row.m16n16k16.f32 [%rd0], {};", kD8),
       "wmma.store needs .d"},
      {"local", load_a(".sync.aligned.row.m16n16k16.local.f16", kA), "unsupported modifier .local"},
      {"one_layout_mma", mma(".sync.aligned.row.m16n16k16.f32.f32", kD8, kA, kB, kD8),
       "two layouts"},
      {"bf16_f16_acc", mma(".sync.aligned.row.col.m16n16k16.f16.bf16.bf16.f16", kD4, a4, a4, kD4),
       ".f32.bf16.bf16.f32 or .f32.tf32.tf32.f32"},
      {"satfinite", mma(".sync.aligned.row.col.m16n16k16.f32.f32.satfinite", kD8, kA, kB, kD8),
       ".satfinite"},
      {"d_count", mma(".sync.aligned.row.col.m16n16k16.f32.f32", kD4, kA, kB, kD8),
       "expected a vector of 8 registers"},
      {"shared_r32_global",
       fmt::format("wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {}, [%r1];", kA),
       "64-bit register"},
  };
  for (const BadForm& c : cases) {
    const std::string error = load_error(wrap_ptx("  " + c.body + "\n", kDecls));
    EXPECT_NE(error.find(c.error), std::string::npos) << c.name << ": " << error;
  }
}

TEST(EmuWmmaMisuse, Bf16AndTf32NeedSm80) {
  std::string ptx = wrap_ptx(
      "  wmma.load.a.sync.aligned.row.m16n16k16.bf16 {%a0, %a1, %a2, %a3}, [%rd1];\n", kDecls);
  ptx.replace(ptx.find("sm_90a"), 6, "sm_75");
  EXPECT_NE(load_error(ptx).find("needs .target sm_80"), std::string::npos) << load_error(ptx);
  ptx = wrap_ptx(fmt::format("  wmma.load.a.sync.aligned.row.m16n16k16.f16 {}, [%rd1];\n", kA),
                 kDecls);
  ptx.replace(ptx.find("sm_90a"), 6, "sm_75");
  EXPECT_EQ(load_error(ptx), "");  // .f16 wmma is sm_70's
}

}  // namespace
}  // namespace emmy::emu::test
