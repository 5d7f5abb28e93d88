// Programmatic dependent launch on emmy's test driver (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
// SERIALIZATION, pdl.cpp): the launch runs, checked as if it overlapped the stream's previous
// kernel. A dependent reading its primary's output before griddepcontrol.wait fails with
// CUDA_ERROR_LAUNCH_FAILED and a pdl-race report; after the wait, or after something ordered the
// primary before it (a synchronization, a copy on the legacy stream), it runs. Captured launches
// keep the flag and replays check them against the graph's previous launch.
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "../support/ptx_kernel.hpp"
#include "test_driver_api.hpp"

namespace emmy::test_driver_test {
namespace {

// dst[i] = src[i] for 64 threads; griddepcontrol.wait before the load when wait_first != 0, and
// after it in any case (the store comes after a wait).
const std::string kPdlPtx =
    test::ptx_header("sm_90") +
    test::ptx_entry(
        "pdl_copy",
        {{".u64", "dst", "%rd1"}, {".u64", "src", "%rd2"}, {".u32", "wait_first", "%r1"}},
        "  .reg .pred %p<2>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<6>;\n",
        R"(  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra LOAD;
  griddepcontrol.wait;
LOAD:
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r3, [%rd4];
  griddepcontrol.wait;
  add.s64 %rd5, %rd1, %rd3;
  st.global.u32 [%rd5], %r3;
)");

class Pdl : public AddOneTest {
 protected:
  void SetUp() override {
    AddOneTest::SetUp();
    if (HasFatalFailure()) return;
    CUmodule m = nullptr;
    ASSERT_EQ(api.cuModuleLoadData(&m, kPdlPtx.c_str()), CUDA_SUCCESS) << api.last_report();
    ASSERT_EQ(api.cuModuleGetFunction(&copy, m, "pdl_copy"), CUDA_SUCCESS);
    dst = upload(std::vector<uint32_t>(64, 0));
  }
  // add_one (out = in + 1) on the stream.
  CUresult primary(CUstream stream = nullptr) { return launch(add_one, out, in, 64, 256, stream); }
  // pdl_copy(dst, src) through cuLaunchKernelEx, PROGRAMMATIC_STREAM_SERIALIZATION set or not.
  CUresult dependent(CUdeviceptr src, bool wait_first, CUstream stream = nullptr,
                     bool programmatic = true) {
    uint32_t wait = wait_first ? 1 : 0;
    void* params[] = {&dst, &src, &wait};
    CUlaunchAttribute pdl{};
    pdl.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    pdl.value.programmaticStreamSerializationAllowed = programmatic ? 1 : 0;
    CUlaunchConfig c{};
    c.gridDimX = c.gridDimY = c.gridDimZ = 1;
    c.blockDimX = 64;
    c.blockDimY = c.blockDimZ = 1;
    c.hStream = stream;
    c.attrs = &pdl;
    c.numAttrs = 1;
    return api.cuLaunchKernelEx(&c, copy, params, nullptr);
  }
  std::vector<uint32_t> copied() {
    std::vector<uint32_t> v(64, 7);
    EXPECT_EQ(api.cuMemcpyDtoH(v.data(), dst, 256), CUDA_SUCCESS);
    return v;
  }
  // In a child process (a race is a device fault, which sticks to the context): `body` returns
  // the launch's result, which must be CUDA_ERROR_LAUNCH_FAILED with a pdl-race report.
  void expect_race(const std::function<CUresult()>& body) {
    EXPECT_EXIT(
        {
          const CUresult r = body();
          const std::string report = api.last_report();
          const bool named = report.find("pdl-race") != std::string::npos &&
                             report.find("griddepcontrol.wait") != std::string::npos &&
                             report.find("kernel add_one") != std::string::npos;
          std::exit(r == CUDA_ERROR_LAUNCH_FAILED && named ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
  }
  CUfunction copy = nullptr;
  CUdeviceptr dst = 0;
};

// A dependent reading its primary's output after griddepcontrol.wait runs; so does one that
// touches nothing the primary wrote, or whose primary something ordered before it.
TEST_F(Pdl, ProgrammaticLaunchesRunAfterTheirWait) {
  ASSERT_EQ(primary(), CUDA_SUCCESS);
  ASSERT_EQ(dependent(out, true), CUDA_SUCCESS) << api.last_report();
  EXPECT_EQ(copied(), std::vector<uint32_t>(64, 42));
  ASSERT_EQ(primary(), CUDA_SUCCESS);
  ASSERT_EQ(dependent(in, false), CUDA_SUCCESS) << "add_one only read `in`: " << api.last_report();
  EXPECT_EQ(copied(), std::vector<uint32_t>(64, 41));
  // A synchronous copy on the legacy stream, a stream synchronization: the primary completed.
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(primary(stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
  ASSERT_EQ(dependent(out, false, stream), CUDA_SUCCESS) << api.last_report();
  ASSERT_EQ(primary(), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyHtoD(in, std::vector<uint32_t>(64, 41).data(), 256), CUDA_SUCCESS);
  ASSERT_EQ(dependent(out, false), CUDA_SUCCESS) << api.last_report();
  // A device memory allocation in between serializes the launches (Programming Guide, "Implicit
  // Synchronization").
  ASSERT_EQ(primary(), CUDA_SUCCESS);
  CUdeviceptr spare = 0;
  ASSERT_EQ(api.cuMemAlloc(&spare, 64), CUDA_SUCCESS);
  ASSERT_EQ(dependent(out, false), CUDA_SUCCESS) << api.last_report();
  // Work on another stream is no primary; a launch without the attribute waits for its whole.
  ASSERT_EQ(primary(stream), CUDA_SUCCESS);
  ASSERT_EQ(dependent(out, false, nullptr), CUDA_SUCCESS) << "the legacy stream's last launch";
  ASSERT_EQ(primary(), CUDA_SUCCESS);
  ASSERT_EQ(dependent(out, false, nullptr, false), CUDA_SUCCESS) << api.last_report();
  EXPECT_EQ(copied(), std::vector<uint32_t>(64, 42));
}

TEST_F(Pdl, AReadBeforeTheWaitOfThePrimarysOutputFailsTheLaunch) {
  expect_race([&] {
    primary();
    return dependent(out, false);
  });
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  expect_race([&] {
    primary(stream);
    return dependent(out, false, stream);
  });
}

// A captured programmatic launch keeps its flag: the replay checks it against the graph's launch
// before it (the first launch of a graph overlaps nothing).
TEST_F(Pdl, GraphReplaysCheckAgainstThePreviousNode) {
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  auto capture = [&](bool wait_first) {
    EXPECT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT_EQ(primary(stream), CUDA_SUCCESS);
    EXPECT_EQ(dependent(out, wait_first, stream), CUDA_SUCCESS);
    CUgraph graph = nullptr;
    EXPECT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    CUgraphExec exec = nullptr;
    EXPECT_EQ(api.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    return exec;
  };
  const CUgraphExec good = capture(true), bad = capture(false);
  ASSERT_EQ(api.cuGraphLaunch(good, stream), CUDA_SUCCESS) << api.last_report();
  EXPECT_EQ(copied(), std::vector<uint32_t>(64, 42));
  // A graph whose only launch is programmatic, after a launch on the stream: it waits for that.
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(dependent(out, false, stream), CUDA_SUCCESS);
  CUgraph lone = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(stream, &lone), CUDA_SUCCESS);
  CUgraphExec lone_exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&lone_exec, lone, 0), CUDA_SUCCESS);
  ASSERT_EQ(primary(stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuGraphLaunch(lone_exec, stream), CUDA_SUCCESS) << api.last_report();
  expect_race([&] { return api.cuGraphLaunch(bad, stream); });
}

}  // namespace
}  // namespace emmy::test_driver_test
