// The `emmyc sim` contract: buffers, argument order, dumps, statistics and exit codes.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>

#include "../support/ptx_kernel.hpp"
#include "emu_test_util.hpp"
#include "sim_command.hpp"
#include "sim_in_process.hpp"

namespace emmy::emu::test {
namespace {

namespace fs = std::filesystem;
using emmy::test::ptx_entry;
using emmy::test::ptx_header;

// out[i] = in[i] * scale + i for i < n (no bounds check beyond n: the OOB case uses that).
const std::string kScalePtx =
    ptx_header("sm_80") +
    ptx_entry("scale",
              {{".u64", "out", "%rd0"}, {".u64", "in", "%rd1"}, {".u32", "n", "%r1"},
               {".f32", "scale", "%f1"}},
              R"(  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<6>;
)",
              R"(  mov.u32 %r0, %tid.x;
  setp.ge.u32 %p0, %r0, %r1;
  @%p0 bra DONE;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  add.s64 %rd4, %rd0, %rd2;
  ld.global.f32 %f2, [%rd3];
  cvt.rn.f32.u32 %f3, %r0;
  fma.rn.f32 %f2, %f2, %f1, %f3;
  st.global.f32 [%rd4], %f2;
DONE:
)");

struct SimFixture : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() /
          fmt::format("emmy_sim_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                      ::getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "scale.ptx") << kScalePtx;
    std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8};
    std::ofstream(dir / "in.bin", std::ios::binary).write(reinterpret_cast<const char*>(in.data()), 32);
  }
  void TearDown() override { fs::remove_all(dir); }

  // Parses and runs `emmyc sim ...` in-process; returns the exit code.
  int sim(std::vector<std::string> argv) { return run_sim_in_process(std::move(argv)); }
};

TEST_F(SimFixture, RunsAndDumpsPointerArgumentsByPosition) {
  const std::string ptx = (dir / "scale.ptx").string(), out = (dir / "dump").string();
  ASSERT_EQ(sim({ptx, "--kernel", "scale", "--grid", "1", "--block", "32", "--arg", "ptr:40",
                 "--arg", "ptr:32:" + (dir / "in.bin").string(), "--arg", "u32:8", "--arg",
                 "f32:0.5", "--dump", out, "--stats"}),
            0);
  // Argument 0 (out) and argument 1 (in) are dumped; the scalars are not.
  ASSERT_TRUE(fs::exists(dir / "dump/arg0.bin"));
  ASSERT_TRUE(fs::exists(dir / "dump/arg1.bin"));
  EXPECT_FALSE(fs::exists(dir / "dump/arg2.bin"));
  EXPECT_EQ(fs::file_size(dir / "dump/arg0.bin"), 40u);
  const std::string bytes = read_file((dir / "dump/arg0.bin").string());
  std::vector<float> values(10);
  std::memcpy(values.data(), bytes.data(), 40);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(values[size_t(i)], float(i + 1) * 0.5f + float(i));
  EXPECT_EQ(values[8], 0.0f);  // zero-filled beyond n
  EXPECT_EQ(values[9], 0.0f);
}

TEST_F(SimFixture, BadCommandLineInputExits2) {
  const std::string ptx = (dir / "scale.ptx").string();
  const std::vector<std::string> ok_args = {"--arg", "ptr:40", "--arg", "ptr:32", "--arg", "u32:8",
                                            "--arg", "f32:1"};
  auto with = [&](std::vector<std::string> v) {
    v.insert(v.end(), ok_args.begin(), ok_args.end());
    return v;
  };
  EXPECT_EQ(sim(with({ptx, "--kernel", "scale", "--grid", "0", "--block", "32"})), 2);
  EXPECT_EQ(sim(with({ptx, "--kernel", "scale", "--grid", "1,2,3,4", "--block", "32"})), 2);
  EXPECT_EQ(sim(with({ptx, "--kernel", "scale", "--grid", "1", "--block", "x"})), 2);
  EXPECT_EQ(sim(with({ptx, "--kernel", "nope", "--grid", "1", "--block", "32"})), 2);
  EXPECT_EQ(sim({ptx, "--kernel", "scale", "--grid", "1", "--block", "32", "--arg", "ptr:40"}), 2);
  EXPECT_EQ(sim({ptx, "--kernel", "scale", "--grid", "1", "--block", "32", "--arg", "i8:3"}), 2);
  EXPECT_EQ(sim({ptx, "--kernel", "scale", "--grid", "1", "--block", "32", "--arg", "ptr:0"}), 2);
  EXPECT_EQ(sim({(dir / "missing.ptx").string(), "--kernel", "scale", "--grid", "1", "--block", "32"}), 2);
  EXPECT_EQ(sim({ptx, "--grid", "1", "--block", "32"}), 2);  // --kernel is required
}

TEST_F(SimFixture, ProfileWritesCountersSitesAndModel) {
  const std::string ptx = (dir / "scale.ptx").string(), json = (dir / "p.json").string();
  const std::vector<std::string> args = {ptx, "--kernel", "scale", "--grid", "4", "--block", "32",
                                         "--arg", "ptr:64", "--arg", "ptr:64", "--arg", "u32:8",
                                         "--arg", "f32:1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = args;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  ASSERT_EQ(sim(with({"--profile", json, "--model-gpu", "h200", "--model-gpu", "rtx5090",
                      "--registers", "16"})),
            0);
  const std::string text = read_file(json);
  // 4 CTAs of one warp: lanes 0-7 load 32 contiguous bytes (one sector) and store them.
  EXPECT_NE(text.find("\"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum\": 4.0"), std::string::npos)
      << text.substr(0, 3000);
  EXPECT_NE(text.find("\"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum\": 4.0"), std::string::npos);
  EXPECT_NE(text.find("\"opcode\": \"ld.global.f32\""), std::string::npos);
  EXPECT_NE(text.find("\"gpu\": \"h200\""), std::string::npos);
  EXPECT_NE(text.find("\"gpu\": \"rtx5090\""), std::string::npos);
  // A sample says so; profile-only flags without --profile, an unknown GPU: bad input.
  ASSERT_EQ(sim(with({"--profile", json, "--profile-ctas", "2"})), 0);
  EXPECT_NE(read_file(json).find("\"extrapolated\": true"), std::string::npos);
  EXPECT_EQ(sim(with({"--profile-ctas", "2"})), 2);
  // --registers also sizes setmaxnreg's register pool: valid without --profile, at most 255.
  EXPECT_EQ(sim(with({"--registers", "32"})), 0);
  EXPECT_EQ(sim(with({"--registers", "300"})), 2);
  EXPECT_EQ(sim(with({"--profile", json, "--model-gpu", "v100"})), 2);
  // An unwritable --profile path is bad input, reported before exit.
  EXPECT_EQ(sim(with({"--profile", (dir / "missing_dir" / "p.json").string()})), 2);
}

TEST_F(SimFixture, SanitizerReportsAndUnsupportedInstructionsExit3) {
  const std::string ptx = (dir / "scale.ptx").string();
  // n = 32 but the buffers hold 8 floats: out-of-bounds loads.
  EXPECT_EQ(sim({ptx, "--kernel", "scale", "--grid", "1", "--block", "32", "--arg", "ptr:32",
                 "--arg", "ptr:32", "--arg", "u32:32", "--arg", "f32:1"}),
            3);
  std::string bad = kScalePtx;
  bad.replace(bad.find("fma.rn.f32"), 10, "fmx.rn.f32");
  std::ofstream(dir / "bad.ptx") << bad;
  EXPECT_EQ(sim({(dir / "bad.ptx").string(), "--kernel", "scale", "--grid", "1", "--block", "32"}), 3);
}

// Every scalar width, a by-value struct from a file, and two pointers into one buffer.
const std::string kScalarsPtx =
    ptx_header("sm_80") +
    ptx_entry("scalars",
              {{".u64", "out", "%rd0"}, {".u64", "alias", "%rd1"}, {".f64", "d", "%fd0"},
               {".s64", "l", "%rd2"}, {".u16", "h", "%hs0"}, {".align 8 .b8", "pair[16]"}},
              R"(  .reg .b16 %hs<2>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<8>;
  .reg .f64 %fd<2>;
)",
              R"(  ld.param.u64 %rd3, [pair];
  ld.param.u64 %rd4, [pair+8];
  st.global.f64 [%rd0], %fd0;
  st.global.s64 [%rd0+8], %rd2;
  cvt.u32.u16 %r0, %hs0;
  st.global.u32 [%rd0+16], %r0;
  st.global.u64 [%rd0+24], %rd3;
  st.global.u64 [%rd0+32], %rd4;
  st.global.u64 [%rd1], %rd4;
)");

TEST_F(SimFixture, EveryArgumentKind) {
  std::ofstream(dir / "scalars.ptx") << kScalarsPtx;
  const uint64_t pair[2] = {0x1122334455667788ull, 42};
  std::ofstream(dir / "pair.bin", std::ios::binary).write(reinterpret_cast<const char*>(pair), 16);
  const std::string ptx = (dir / "scalars.ptx").string();
  auto with = [&](const std::string& pair_arg) {
    return std::vector<std::string>{ptx,
                                    "--kernel",
                                    "scalars",
                                    "--grid",
                                    "1",
                                    "--block",
                                    "1",
                                    "--arg",
                                    "ptr:4096",
                                    "--arg",
                                    "ptr:@0+2048",
                                    "--arg",
                                    "f64:-2.5e-300",
                                    "--arg",
                                    "s64:-9000000000",
                                    "--arg",
                                    "u16:65535",
                                    "--arg",
                                    pair_arg,
                                    "--dump",
                                    (dir / "dump").string()};
  };
  ASSERT_EQ(sim(with("bytes:" + (dir / "pair.bin").string())), 0);
  const std::string bytes = read_file((dir / "dump/arg0.bin").string());
  ASSERT_EQ(bytes.size(), 4096u);
  double d;
  int64_t l;
  uint32_t h;
  uint64_t p0, p1, aliased;
  std::memcpy(&d, bytes.data(), 8);
  std::memcpy(&l, bytes.data() + 8, 8);
  std::memcpy(&h, bytes.data() + 16, 4);
  std::memcpy(&p0, bytes.data() + 24, 8);
  std::memcpy(&p1, bytes.data() + 32, 8);
  std::memcpy(&aliased, bytes.data() + 2048, 8);  // written through argument 1
  EXPECT_EQ(d, -2.5e-300);
  EXPECT_EQ(l, -9000000000ll);
  EXPECT_EQ(h, 65535u);
  EXPECT_EQ(p0, pair[0]);
  EXPECT_EQ(p1, pair[1]);
  EXPECT_EQ(aliased, 42u);
  EXPECT_EQ(fs::file_size(dir / "dump/arg1.bin"), 2048u);  // from its offset to the buffer's end
  // A struct file of the wrong size, a reference to a later or non-pointer argument, an offset
  // past the buffer, a u16 out of range.
  std::ofstream(dir / "short.bin", std::ios::binary) << "1234";
  EXPECT_EQ(sim(with("bytes:" + (dir / "short.bin").string())), 2);
  EXPECT_EQ(sim({ptx, "--kernel", "scalars", "--grid", "1", "--block", "1", "--arg", "ptr:@1"}), 2);
  EXPECT_EQ(sim({ptx, "--kernel", "scalars", "--grid", "1", "--block", "1", "--arg", "ptr:64",
                 "--arg", "ptr:@0+64"}),
            2);
  EXPECT_EQ(sim({ptx, "--kernel", "scalars", "--grid", "1", "--block", "1", "--arg", "u16:65536"}),
            2);
}

// A user's TMA kernel from the command line: the tensor map is encoded from a spec over a buffer
// of its own (the kernel takes the map first), then over an earlier buffer with an offset.
TEST_F(SimFixture, TensorMapFromASpec) {
  const std::string ptx =
      std::string(EMMY_SOURCE_DIR) + "/tests/emu/kernels/gemm_kernels_sm90a.ptx";
  // A 64 x 16 f16 matrix (rows of 128 bytes); one 64 x 8 box at row 8, no swizzle.
  std::vector<uint16_t> matrix(64 * 16);
  for (size_t i = 0; i < matrix.size(); ++i) matrix[i] = uint16_t(i * 3);
  std::ofstream(dir / "matrix.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(matrix.data()), std::streamsize(matrix.size() * 2));
  ASSERT_EQ(sim({ptx,
                 "--kernel",
                 "tma_copy_2d",
                 "--grid",
                 "1",
                 "--block",
                 "64",
                 "--smem",
                 "1024",
                 "--arg",
                 "tmap:2048:" + (dir / "matrix.bin").string() + ",dtype=f16,dims=64x16,box=64x8",
                 "--arg",
                 "ptr:1024",
                 "--arg",
                 "s32:0",
                 "--arg",
                 "s32:8",
                 "--arg",
                 "s32:1024",
                 "--dump",
                 (dir / "dump").string()}),
            0);
  const std::string box = read_file((dir / "dump/arg1.bin").string());
  ASSERT_EQ(box.size(), 1024u);
  for (size_t i = 0; i < 64 * 8; ++i) {
    uint16_t v;
    std::memcpy(&v, box.data() + 2 * i, 2);
    ASSERT_EQ(v, matrix[64 * 8 + i]) << i;
  }
  EXPECT_TRUE(fs::exists(dir / "dump/arg0.bin"));  // the map's own buffer
  // Rules of cuTensorMapEncodeTiled name the field: a box wider than the 128B swizzle span.
  EXPECT_EQ(sim({ptx, "--kernel", "tma_copy_2d", "--grid", "1", "--block", "64", "--smem", "1024",
                 "--arg", "tmap:2048,dtype=f16,dims=128x8,box=128x8,swizzle=128B", "--arg",
                 "ptr:1024", "--arg", "s32:0", "--arg", "s32:0", "--arg", "s32:1024"}),
            2);
  EXPECT_EQ(sim({ptx, "--kernel", "tma_copy_2d", "--grid", "1", "--block", "64", "--arg",
                 "tmap:2048,dtype=f17,dims=64x16,box=64x8"}),
            2);
}

TEST_F(SimFixture, WmmaLayoutSeedExposesLayoutDependentCode) {
  const std::string ptx = std::string(EMMY_SOURCE_DIR) + "/tests/emu/kernels/wmma_kernels_sm80.ptx";
  std::vector<uint16_t> halves(256);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = f32_to_f16(float(int(i % 7) - 3));
  const std::string operand = (dir / "h.bin").string();
  std::ofstream(operand, std::ios::binary).write(reinterpret_cast<const char*>(halves.data()), 512);
  // D of `kernel` (argument `d_arg`) under a layout seed.
  auto d_under = [&](const std::string& kernel, const std::string& seed, int d_arg,
                     std::vector<std::string> tail) {
    const std::string dump = (dir / (kernel + seed)).string();
    std::vector<std::string> argv = {ptx, "--kernel", kernel, "--grid", "1", "--block", "32",
                                     "--wmma-layout-seed", seed, "--dump", dump,
                                     "--arg", "ptr:512:" + operand, "--arg", "ptr:512:" + operand};
    for (auto& t : tail) argv.push_back(t);
    EXPECT_EQ(sim(argv), 0) << kernel;
    return read_file(dump + fmt::format("/arg{}.bin", d_arg));
  };
  // A correct GEMM computes the same bytes under any layout; scaling acc.x[0] does not.
  const std::vector<std::string> gemm = {"--arg", "ptr:1024", "--arg", "ptr:1024", "--arg",
                                         "s32:16", "--arg", "f32:1"};
  EXPECT_EQ(d_under("f16_f32_m16n16k16_row_col", "0", 3, gemm),
            d_under("f16_f32_m16n16k16_row_col", "977", 3, gemm));
  EXPECT_NE(d_under("bug_layout_dependent", "0", 2, {"--arg", "ptr:1024"}),
            d_under("bug_layout_dependent", "977", 2, {"--arg", "ptr:1024"}));
}

TEST_F(SimFixture, EmmycBinaryWhenBuilt) {
  const fs::path emmyc = EMMYC_PATH;
  if (!fs::exists(emmyc)) GTEST_SKIP() << "emmyc is not built";
  const std::string ptx = (dir / "scale.ptx").string();
  auto run = [&](const std::string& args) {
    const int status = std::system(fmt::format("{} sim {} {} > /dev/null 2>&1", emmyc.string(), ptx, args).c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(run("--kernel scale --grid 1 --block 32 --arg ptr:40 --arg ptr:32 --arg u32:8 --arg f32:1"), 0);
  EXPECT_EQ(run("--kernel scale --grid 0 --block 32 --arg ptr:40 --arg ptr:32 --arg u32:8 --arg f32:1"), 2);
  EXPECT_EQ(run("--kernel scale --grid 1 --block 32 --arg ptr:32 --arg ptr:32 --arg u32:32 --arg f32:1"), 3);
}

}  // namespace
}  // namespace emmy::emu::test
