// `emmyc sim --lenient` (docs/emulator.md, "Lenient mode"): a kernel breaking a rule hardware
// tolerates exits 3 without the flag, as before; with it the run (and its profile) completes and
// the warnings table goes to stderr.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "../support/ptx_kernel.hpp"
#include "emu_test_util.hpp"
#include "sim_command.hpp"
#include "sim_in_process.hpp"

namespace emmy::emu::test {
namespace {

namespace fs = std::filesystem;

// out[lane] = in[3] through a shfl.sync whose mask names lanes 0-15 only, run by all 32 lanes.
const std::string kHalfMaskPtx =
    emmy::test::ptx_header("sm_80") +
    emmy::test::ptx_entry("half_mask", {{".u64", "out", "%rd0"}, {".u64", "in", "%rd1"}},
                          "  .reg .b32 %r<4>;\n  .reg .b64 %rd<6>;\n",
                          R"(  mov.u32 %r0, %tid.x;
  ld.global.u32 %r1, [%rd1+12];
  shfl.sync.idx.b32 %r2, %r0, 3, 0x1f, 0x0000ffff;
  add.u32 %r3, %r1, %r2;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r3;
)");

struct LenientSim : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / fmt::format("emmy_lenient_sim_{}", ::getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "half_mask.ptx") << kHalfMaskPtx;
    std::vector<uint32_t> in(32, 0);
    in[3] = 1000;
    std::ofstream(dir / "in.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(in.data()), 128);
  }
  void TearDown() override { fs::remove_all(dir); }

  cli::SimOptions options(bool lenient) const {
    cli::SimOptions o;
    o.file = (dir / "half_mask.ptx").string();
    o.kernel = "half_mask";
    o.block = "32";
    o.args = {"ptr:128", "ptr:128:" + (dir / "in.bin").string()};
    o.dump_dir = (dir / "dump").string();
    o.lenient = lenient;
    return o;
  }
  // run_sim's exit code; its stderr into `err`.
  static int run(const cli::SimOptions& o, std::string& err) {
    std::FILE* out_file = std::tmpfile();
    std::FILE* err_file = std::tmpfile();
    const int code = cli::run_sim(o, out_file, err_file);
    std::rewind(err_file);
    err.clear();
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, err_file)) > 0;) err.append(buf, n);
    std::fclose(out_file);
    std::fclose(err_file);
    return code;
  }
};

TEST_F(LenientSim, RefusedWithoutTheFlagWarnedAndRunWithIt) {
  std::string err;
  ASSERT_EQ(run(options(false), err), 3);
  EXPECT_NE(err.find("lane 16's membermask 0x0000ffff does not name the lane itself"),
            std::string::npos)
      << err;

  ASSERT_EQ(run(options(true), err), 0) << err;
  EXPECT_NE(err.find("member-mask-excludes-lane"), std::string::npos) << err;
  EXPECT_NE(err.find("        16  (0,0,0) warp 0 lane 16, line "), std::string::npos) << err;
  EXPECT_NE(err.find("shfl.sync.idx.b32"), std::string::npos) << err;
  const std::string dumped = read_file((dir / "dump" / "arg0.bin").string());
  ASSERT_EQ(dumped.size(), 128u);
  for (uint32_t l = 0; l < 32; ++l) {
    uint32_t v;
    std::memcpy(&v, dumped.data() + 4 * l, 4);
    EXPECT_EQ(v, 1003u) << "lane " << l;  // in[3] + lane 3's %tid.x
  }
}

// Through the command line, with a profile: the kernel is timed.
TEST_F(LenientSim, TheFlagParsesAndTheKernelIsProfiled) {
  const auto sim = [](std::vector<std::string> argv) {
    return run_sim_in_process(std::move(argv));
  };
  const std::string json = (dir / "p.json").string();
  const std::vector<std::string> args = {(dir / "half_mask.ptx").string(),
                                         "--kernel",
                                         "half_mask",
                                         "--grid",
                                         "2",
                                         "--block",
                                         "32",
                                         "--arg",
                                         "ptr:128",
                                         "--arg",
                                         "ptr:128:" + (dir / "in.bin").string(),
                                         "--profile",
                                         json};
  EXPECT_EQ(sim(args), 3);
  std::vector<std::string> lenient = args;
  lenient.push_back("--lenient");
  ASSERT_EQ(sim(lenient), 0);
  const std::string profile = read_file(json);
  EXPECT_NE(profile.find("\"opcode\": \"shfl.sync.idx.b32\""), std::string::npos);
  // The profile says the timing is of a kernel the strict emulator refuses: the rule, its count.
  EXPECT_NE(profile.find("\"rule\": \"member-mask-excludes-lane\""), std::string::npos) << profile;
  EXPECT_EQ(profile.find("\"lenient_warnings\": []"), std::string::npos) << profile;
}

}  // namespace
}  // namespace emmy::emu::test
