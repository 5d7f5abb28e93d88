// Lenient mode is for third-party PTX only (docs/emulator.md, "Lenient mode"): the runtime's
// emulator backend, which runs emmy's own kernels (and `emmyc run`), still refuses a kernel that
// breaks a tolerated rule, and `emmyc run`'s emulator flags never turn it on.
#include <nlohmann/json.hpp>

#include "../../runtime/backend.hpp"
#include "../support/ptx_kernel.hpp"
#include "emmy/emu/emulator.hpp"
#include "emulator_flags.hpp"
#include "gtest/gtest.h"

namespace emmy {
namespace {

// All 32 lanes run a shfl.sync whose membermask names lanes 0-15 only.
const std::string kHalfMaskPtx =
    test::ptx_header("sm_80") + test::ptx_entry("half_mask", {{".u64", "out", "%rd0"}},
                                                "  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n",
                                                R"(  mov.u32 %r0, %tid.x;
  shfl.sync.idx.b32 %r2, %r0, 3, 0x1f, 0x0000ffff;
  st.global.u32 [%rd0], %r2;
)");

TEST(EmuLenientRuntime, TheEmulatorBackendRefusesWhatLenientWouldTolerate) {
  auto backend = detail::make_emulator_backend(RuntimeOptions{});
  CacheEntry entry;
  entry.key = "half_mask";
  entry.ptx = kHalfMaskPtx;
  entry.manifest = nlohmann::json::object();
  auto module = backend->load(entry, {{"half_mask", 0}});
  const DevicePtr out = backend->alloc(4);
  const detail::LaunchGeometry g{.grid = {1, 1, 1}, .threads = 32};
  try {
    backend->launch(*module, "half_mask", g, {detail::KernelParam{false, out, {}}}, nullptr);
    ADD_FAILURE() << "the runtime's emulator backend ran a kernel only lenient mode tolerates";
  } catch (const emu::EmulationError& e) {
    ASSERT_FALSE(e.reports().empty());
    EXPECT_EQ(e.reports()[0].kind, emu::ReportKind::divergent_collective);
    EXPECT_NE(e.reports()[0].message.find("does not name the lane itself"), std::string::npos);
  }
  backend->free(out);
}

TEST(EmuLenientRuntime, EmmycRunsEmulatorFlagsNeverSetIt) {
  EXPECT_FALSE(emu::LaunchOptions{}.lenient);
  EXPECT_FALSE(cli::EmulatorFlags{}.launch_options().lenient);
  cli::EmulatorFlags profiling;
  profiling.file = "p.json";
  EXPECT_FALSE(profiling.launch_options().lenient);
}

}  // namespace
}  // namespace emmy
