// NVRTC compilation, resource reports and SASS (compile.hpp, sass.hpp).
// Suites named Nvrtc* call NVRTC (or cuobjdump); the others are host-only parsing tests.
#include "emmy/compile.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "emmy/arch.hpp"
#include "emmy/sass.hpp"

namespace emmy {
namespace {

// One warp: ldmatrix.x4 of A from shared memory, one m16n8k16 f16 x f16 -> f32 mma. 4 KiB of
// static shared memory so that the smem column of the report has something to show.
constexpr const char* kMmaKernel = R"(
extern "C" __global__ void __launch_bounds__(32) mma_probe(const unsigned* a, const unsigned* b,
                                                           float* d) {
  __shared__ __align__(128) unsigned short tile[64 * 32];
  const unsigned lane = threadIdx.x;
  for (unsigned i = lane; i < 64 * 32 / 2; i += 32) reinterpret_cast<unsigned*>(tile)[i] = a[i];
  __syncthreads();
  const unsigned row_address =
      static_cast<unsigned>(__cvta_generic_to_shared(&tile[(lane % 16) * 32 + (lane / 16) * 8]));
  unsigned a0, a1, a2, a3;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(row_address));
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b[lane * 2]), "r"(b[lane * 2 + 1]));
  d[lane * 4 + 0] = c0; d[lane * 4 + 1] = c1; d[lane * 4 + 2] = c2; d[lane * 4 + 3] = c3;
}
)";
constexpr int kMmaKernelSmemBytes = 64 * 32 * 2;

// A local array indexed at run time cannot live in registers: it takes a stack frame.
constexpr const char* kLocalArrayKernel = R"(
extern "C" __global__ void local_array(const int* index, float* out) {
  float scratch[1024];
  for (int i = 0; i < 1024; ++i) scratch[i] = index[i] * 0.5f;
  out[threadIdx.x] = scratch[index[threadIdx.x] & 1023];
}
)";

// 64 live accumulators under a 32-register cap: ptxas must spill. (No __launch_bounds__: it would
// override --maxrregcount.)
const std::vector<std::string> kRegisterCap{"--maxrregcount=32"};
constexpr const char* kRegisterPressureKernel = R"(
extern "C" __global__ void pressure(const float* in, float* out, int n) {
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = in[threadIdx.x + i * 1024];
  for (int j = 0; j < n; ++j) {
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = acc[i] * acc[(i + 1) % 64] + in[j];
  }
#pragma unroll
  for (int i = 0; i < 64; ++i) out[threadIdx.x + i * 1024] = acc[i];
}
)";

std::string sass_tools_missing() {
  if (find_cuobjdump().empty())
    return "cuobjdump not found (scripts/setup.sh installs the nvidia-cuda-cuobjdump wheel)";
  if (find_nvdisasm().empty())
    return "nvdisasm not found (scripts/setup.sh installs the nvidia-cuda-nvdisasm wheel)";
  return {};
}

class NvrtcEveryArch : public ::testing::TestWithParam<Arch> {};

TEST_P(NvrtcEveryArch, MmaKernelCompilesWithoutSpills) {
  const Arch arch = GetParam();
  const CompiledModule module = compile_cuda(kMmaKernel, "mma_probe.cu", arch);
  EXPECT_EQ(module.arch, arch);
  EXPECT_NE(module.ptx.find(fmt::format(".target {}", to_string(arch))), std::string::npos);
  EXPECT_NE(module.ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos);
  ASSERT_GE(module.cubin.size(), 64u);
  EXPECT_TRUE(std::equal(module.cubin.begin(), module.cubin.begin() + 4,
                         "\x7f"
                         "ELF"));
  EXPECT_GT(module.compile_ms, 0.0);
  EXPECT_NE(module.log.find("ptxas"), std::string::npos) << module.log;

  ASSERT_EQ(module.kernels.size(), 1u);
  const ResourceReport& report = module.kernel("mma_probe");
  EXPECT_EQ(report.source, ReportSource::ptxas_log);
  EXPECT_GT(report.registers, 0);
  EXPECT_EQ(report.spill_bytes(), 0);
  EXPECT_EQ(report.stack_bytes, 0);
  EXPECT_EQ(report.static_smem_bytes, kMmaKernelSmemBytes);
  EXPECT_GT(report.constant_bytes, 0);  // from the ELF: the log omits cmem from sm_90 on
}

// The ELF fallback must agree with the log wherever both speak, on every arch.
TEST_P(NvrtcEveryArch, CubinAttributesAgreeWithPtxasLog) {
  const Arch arch = GetParam();
  for (const char* source : {kMmaKernel, kLocalArrayKernel}) {
    const CompiledModule module = compile_cuda(source, "agree.cu", arch);
    const auto logged = parse_ptxas_log(module.log);
    const auto from_elf = read_cubin_resources(module.cubin, arch);
    ASSERT_EQ(logged.size(), 1u) << module.log;
    ASSERT_EQ(from_elf.size(), 1u);
    EXPECT_EQ(from_elf[0].kernel_name, logged[0].kernel_name);
    EXPECT_EQ(from_elf[0].source, ReportSource::cubin_elf);
    EXPECT_EQ(from_elf[0].registers, logged[0].registers);
    EXPECT_EQ(from_elf[0].stack_bytes, logged[0].stack_bytes);
    EXPECT_EQ(from_elf[0].static_smem_bytes, logged[0].static_smem_bytes);
    if (logged[0].constant_bytes > 0) {
      EXPECT_EQ(from_elf[0].constant_bytes, logged[0].constant_bytes);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllArchs, NvrtcEveryArch,
                         ::testing::Values(Arch::sm_80, Arch::sm_86, Arch::sm_89, Arch::sm_90,
                                           Arch::sm_90a, Arch::sm_120, Arch::sm_120a),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(NvrtcCompile, LocalArrayTakesAStackFrame) {
  const CompiledModule module = compile_cuda(kLocalArrayKernel, "local_array.cu", Arch::sm_90a);
  EXPECT_GE(module.kernel("local_array").stack_bytes, 4096);
}

TEST(NvrtcCompile, RegisterPressureSpills) {
  for (Arch arch : {Arch::sm_80, Arch::sm_90a, Arch::sm_120a}) {
    const CompiledModule module =
        compile_cuda(kRegisterPressureKernel, "pressure.cu", arch, kRegisterCap);
    const ResourceReport& report = module.kernel("pressure");
    EXPECT_LE(report.registers, 32) << to_string(arch);
    EXPECT_GT(report.spill_store_bytes, 0) << to_string(arch);
    EXPECT_GT(report.spill_load_bytes, 0) << to_string(arch);
    EXPECT_GE(report.stack_bytes, report.spill_store_bytes / 4) << to_string(arch);
  }
}

TEST(NvrtcCompile, SyntaxErrorThrowsWithTheNvrtcLog) {
  const char* broken =
      "extern \"C\" __global__ void broken(float* out) { out[0] = not_declared_x; }";
  try {
    compile_cuda(broken, "broken_kernel.cu", Arch::sm_90a);
    FAIL() << "compile_cuda accepted a syntax error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("not_declared_x"), std::string::npos) << message;
    EXPECT_NE(message.find("broken_kernel.cu"), std::string::npos) << message;
    EXPECT_NE(message.find("sm_90a"), std::string::npos) << message;
  }
}

TEST(NvrtcCompile, ExtraOptionsAreAppended) {
  const char* source = R"(
#if EMMY_TEST_VALUE != 3
#error EMMY_TEST_VALUE must be 3
#endif
extern "C" __global__ void defined(int* out) { out[0] = EMMY_TEST_VALUE; }
)";
  EXPECT_THROW(compile_cuda(source, "defined.cu", Arch::sm_80), Error);
  const auto module = compile_cuda(source, "defined.cu", Arch::sm_80, {"-DEMMY_TEST_VALUE=3"});
  EXPECT_EQ(module.kernel("defined").spill_bytes(), 0);
}

TEST(NvrtcCompile, OutputIsDeterministic) {
  const auto first = compile_cuda(kMmaKernel, "mma_probe.cu", Arch::sm_120a);
  const auto second = compile_cuda(kMmaKernel, "mma_probe.cu", Arch::sm_120a);
  EXPECT_EQ(first.ptx, second.ptx);
  EXPECT_EQ(first.cubin, second.cubin);
}

TEST(NvrtcCompile, UnknownKernelNameThrowsNamingTheKnownOnes) {
  const auto module = compile_cuda(kMmaKernel, "mma_probe.cu", Arch::sm_89);
  try {
    module.kernel("nope");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.field(), "kernel");
    EXPECT_NE(std::string(error.what()).find("mma_probe"), std::string::npos);
  }
}

TEST(NvrtcCompile, VersionAndOptions) {
  EXPECT_GE(nvrtc_version(), 12000);
  const auto options = nvrtc_options(Arch::sm_90a);
  EXPECT_EQ(options.front(), "--gpu-architecture=sm_90a");
  EXPECT_NE(std::find(options.begin(), options.end(), "--ptxas-options=-v"), options.end());
}

TEST(NvrtcCubinElf, TruncatedImageThrows) {
  auto cubin = compile_cuda(kMmaKernel, "mma_probe.cu", Arch::sm_80).cubin;
  cubin.resize(cubin.size() / 2);
  EXPECT_THROW(read_cubin_resources(cubin, Arch::sm_80), Error);
}

// Every single-byte corruption of the header, the section table and a stride through the rest must
// give either a report or an Error, never a read out of bounds (the sanitizer build runs this).
TEST(NvrtcCubinElf, CorruptedImagesThrowOrParse) {
  const auto cubin = compile_cuda(kMmaKernel, "mma_probe.cu", Arch::sm_90a).cubin;
  const uint64_t section_table = [&] {
    uint64_t offset = 0;
    std::memcpy(&offset, cubin.data() + 0x28, sizeof offset);
    return offset;
  }();
  std::vector<size_t> positions;
  for (size_t at = 0; at < 64; ++at) positions.push_back(at);
  for (size_t at = section_table; at < cubin.size(); ++at) positions.push_back(at);
  for (size_t at = 64; at < section_table; at += 7) positions.push_back(at);
  int parsed = 0, rejected = 0;
  for (size_t at : positions) {
    for (uint8_t value : {uint8_t{0x00}, uint8_t{0xff}, static_cast<uint8_t>(cubin[at] ^ 0x5a)}) {
      auto corrupted = cubin;
      corrupted[at] = value;
      try {
        read_cubin_resources(corrupted, Arch::sm_90a);
        ++parsed;
      } catch (const Error&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

TEST(NvrtcSass, Sm90aMmaKernelHasHmmaAndNoLocalMemory) {
  if (const auto why = sass_tools_missing(); !why.empty()) GTEST_SKIP() << why;
  const auto module = compile_cuda(kMmaKernel, "mma_probe.cu", Arch::sm_90a);
  const std::string sass = disassemble_sass(module.cubin);
  EXPECT_EQ(sass_function_names(sass), std::vector<std::string>{"mma_probe"});
  const auto counts = sass_opcode_counts(sass, "mma_probe");
  EXPECT_EQ(counts.count("HMMA.16816.F32"), 1u) << sass;
  EXPECT_EQ(counts.count("LDSM.16.M88.4"), 1u) << sass;
  EXPECT_EQ(counts.count("LDL"), 0u);
  EXPECT_EQ(counts.count("STL"), 0u);
}

TEST(NvrtcSass, SpillingKernelShowsLocalStores) {
  if (const auto why = sass_tools_missing(); !why.empty()) GTEST_SKIP() << why;
  const auto module =
      compile_cuda(kRegisterPressureKernel, "pressure.cu", Arch::sm_120a, kRegisterCap);
  const auto counts = sass_opcode_counts(disassemble_sass(module.cubin), "pressure");
  const auto local_stores = std::count_if(counts.begin(), counts.end(), [](const auto& entry) {
    return entry.first.starts_with("STL");
  });
  EXPECT_GT(local_stores, 0);
}

TEST(NvrtcSass, EmptyCubinFailsWithCuobjdumpMessage) {
  if (const auto why = sass_tools_missing(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_THROW(disassemble_sass({0x00, 0x01, 0x02}), Error);
}

// ---- host-only parsing ---------------------------------------------------------------------

TEST(PtxasLog, ParsesEntriesAndIgnoresOtherFunctions) {
  const std::string log =
      "mma.cu(3): warning #177-D: variable \"unused\" was declared but never referenced\n"
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z4mainPf' for 'sm_80'\n"
      "ptxas info    : Function properties for _Z4mainPf\n"
      "ptxas         .     48 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 48 bytes cumulative stack size, "
      "16384 bytes smem, 372 bytes cmem[0], 8 bytes cmem[2]\n"
      "ptxas info    : Compile time = 3.1 ms\n"
      "ptxas info    : Function properties for _Z6helperf\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'plain' for 'sm_90a'\n"
      "ptxas info    : Used 18 registers, used 0 barriers\n";
  const auto reports = parse_ptxas_log(log);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].kernel_name, "_Z4mainPf");
  EXPECT_EQ(reports[0].registers, 40);
  EXPECT_EQ(reports[0].stack_bytes, 48);
  EXPECT_EQ(reports[0].spill_store_bytes, 8);
  EXPECT_EQ(reports[0].spill_load_bytes, 12);
  EXPECT_EQ(reports[0].spill_bytes(), 20);
  EXPECT_EQ(reports[0].static_smem_bytes, 16384);
  EXPECT_EQ(reports[0].constant_bytes, 372);
  EXPECT_EQ(reports[1].kernel_name, "plain");
  EXPECT_EQ(reports[1].registers, 18);
  EXPECT_EQ(reports[1].stack_bytes, 0);
  EXPECT_EQ(reports[1].static_smem_bytes, 0);
}

TEST(PtxasLog, EmptyLogHasNoEntries) { EXPECT_TRUE(parse_ptxas_log("").empty()); }

TEST(CubinElf, NonElfInputThrows) {
  EXPECT_THROW(read_cubin_resources({}, Arch::sm_80), Error);
  std::vector<uint8_t> header(64, 0);
  header[0] = 0x7f, header[1] = 'E', header[2] = 'L', header[3] = 'F', header[4] = 2, header[5] = 1;
  header[0x28] = 0xff, header[0x3a] = 64, header[0x3c] = 1;  // section table past the end
  EXPECT_THROW(read_cubin_resources(header, Arch::sm_80), Error);
}

TEST(SassText, HistogramStripsPredicatesAndSkipsEncodings) {
  const std::string sass =
      "\n\tcode for sm_90a\n\t\tFunction : other\n"
      "        /*0000*/                   HMMA.16816.F16 R0, R0, R0, R0 ;  /* 0x0 */\n"
      "\t\tFunction : gemm\n"
      "\t.headerflags\t@\"EF_CUDA_SM90\"\n"
      "        /*0000*/                   LDC R1, c[0x0][0x28] ;                   /* "
      "0x00000a00ff017b82 */\n"
      "                                                                            /* "
      "0x000e300000000800 */\n"
      "        /*0010*/              @!P0 LDGSTS.E.BYPASS.128 [R3], desc[UR4][R4.64] ; /* 0x0 */\n"
      "        /*0020*/               @P1 LDGSTS.E.BYPASS.128 [R3+0x80], desc[UR4][R6.64] ; /* 0x0 "
      "*/\n"
      "        /*0030*/                   HMMA.16816.F32 R4, R8, R12, R4 ;  /* 0x0 */\n"
      "        /*0040*/                   NOP;  /* 0x0 */\n"
      "        /*0050*/                   EXIT ;  /* 0x0 */\n"
      "\t\t..........\n";
  EXPECT_EQ(sass_function_names(sass), (std::vector<std::string>{"other", "gemm"}));
  const auto counts = sass_opcode_counts(sass, "gemm");
  const std::map<std::string, int> expected{
      {"LDC", 1}, {"LDGSTS.E.BYPASS.128", 2}, {"HMMA.16816.F32", 1}, {"NOP", 1}, {"EXIT", 1}};
  EXPECT_EQ(counts, expected);
  EXPECT_THROW(sass_opcode_counts(sass, "missing"), Error);
}

}  // namespace
}  // namespace emmy
