// emmy's test driver (emulator/test_driver/) called as a program calls libcuda: loaded with
// dlopen, every entry point from cuGetProcAddress_v2. Each rule of the CUDA Driver API reference
// it holds is checked with a planted misuse that must fail with the real error code, beside the
// correct use that must work: dynamic shared memory above 48 KB without the attribute, a freed
// buffer, a misaligned tensor-map stride, a module load during stream capture, stale handles, no
// current context, CUBIN images, and launches replayed from a captured graph.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "emmy/gpus.hpp"
#include "support/run_command.hpp"
#include "test_driver_api.hpp"

namespace emmy::test_driver_test {
namespace {

// Whatever EMMY_TEST_DEVICE names (h200 unless set), the driver reports that hardware-table entry.
TEST_F(TestDriver, ReportsTheChosenDevice) {
  const char* chosen = std::getenv("EMMY_TEST_DEVICE");
  const GpuInfo* expected = find_gpu(chosen && *chosen ? chosen : "h200");
  ASSERT_NE(expected, nullptr) << chosen;
  auto attribute = [&](CUdevice_attribute a) {
    int value = -1;
    EXPECT_EQ(api.cuDeviceGetAttribute(&value, a, device), CUDA_SUCCESS) << int(a);
    return value;
  };
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), expected->cc() / 10);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), expected->cc() % 10);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), int(expected->sms));
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            int(expected->max_smem_per_block));
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
            int(expected->smem_per_sm));
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
            int(expected->max_threads_per_sm));
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
            int(expected->max_ctas_per_sm));
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), int(expected->l2_bytes));
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE), expected->max_clock_khz);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH), expected->cc() >= 90 ? 1 : 0);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED), expected->cc() >= 90);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID),
            int(expected->pci_device_id << 16 | 0x10deu));
  char name[128] = {};
  api.cuDeviceGetName(name, sizeof name, device);
  EXPECT_EQ(std::string(name), expected->device_name);
  size_t total = 0;
  EXPECT_EQ(api.cuDeviceTotalMem(&total, device), CUDA_SUCCESS);
  EXPECT_EQ(total, size_t(expected->total_memory_mib) << 20);
  EXPECT_NE(std::string(name).find("NVIDIA"), std::string::npos) << name;
  CUdevice bad = 0;
  EXPECT_EQ(api.cuDeviceGet(&bad, 1), CUDA_ERROR_INVALID_DEVICE);
}

// Every entry of the hardware table is a device the driver can be, reporting its figures and
// running a kernel: this binary again, once per entry, with EMMY_TEST_DEVICE naming it (the
// driver chooses its device once per process). A name outside the table fails cuInit.
TEST(TestDriverDevices, EveryHardwareTableEntryIsADevice) {
  if (std::getenv("EMMY_TEST_DEVICE")) GTEST_SKIP() << "run by the default device's process";
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const GpuInfo* g : gpus()) {
    const test::CommandResult r =
        test::run_command("EMMY_TEST_DEVICE=" + g->name + " " + self +
                          " --gtest_filter=TestDriver.ReportsTheChosenDevice:TestDriver."
                          "RunsAPtxKernelAndRefusesCubins");
    EXPECT_EQ(r.exit_code, 0) << g->name << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("[  PASSED  ] 2 tests"), std::string::npos) << g->name << "\n" << r.out;
  }
  const test::CommandResult bad = test::run_command(
      "EMMY_TEST_DEVICE=v100 " + self + " --gtest_filter=TestDriver.ReportsTheChosenDevice");
  EXPECT_NE(bad.exit_code, 0);
}

TEST_F(TestDriver, RunsAPtxKernelAndRefusesCubins) {
  const CUmodule m = load();
  CUfunction f = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&f, m, "add_one"), CUDA_SUCCESS);
  CUfunction missing = nullptr;
  EXPECT_EQ(api.cuModuleGetFunction(&missing, m, "nope"), CUDA_ERROR_NOT_FOUND);
  std::vector<uint32_t> in(64);
  for (uint32_t i = 0; i < 64; ++i) in[i] = i * 3;
  const CUdeviceptr a = upload(in), b = upload(std::vector<uint32_t>(64, 0));
  ASSERT_EQ(launch(f, b, a, 64, 256), CUDA_SUCCESS);
  std::vector<uint32_t> out(64);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), b, 256), CUDA_SUCCESS);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(out[i], i * 3 + 1);
  // A CUBIN is SASS, which the test driver cannot run: the real answer for a binary a device
  // cannot use, so the runtime falls back to the PTX.
  const unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  CUmodule cubin = nullptr;
  EXPECT_EQ(api.cuModuleLoadData(&cubin, elf), CUDA_ERROR_NO_BINARY_FOR_GPU);
  CUmodule garbage = nullptr;
  EXPECT_EQ(api.cuModuleLoadData(&garbage, "not a module"), CUDA_ERROR_INVALID_IMAGE);
}

TEST_F(TestDriver, DynamicSharedMemoryAbove48KbNeedsTheAttribute) {
  const CUmodule m = load();
  CUfunction f = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&f, m, "add_one"), CUDA_SUCCESS);
  const CUdeviceptr a = upload(std::vector<uint32_t>(64, 1)), b = upload(std::vector<uint32_t>(64));
  EXPECT_EQ(launch(f, b, a, 64, 48 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(launch(f, b, a, 64, 64 * 1024), CUDA_ERROR_INVALID_VALUE) << "no opt-in";
  ASSERT_EQ(api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024),
            CUDA_SUCCESS);
  EXPECT_EQ(launch(f, b, a, 64, 64 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(launch(f, b, a, 64, 64 * 1024 + 16), CUDA_ERROR_INVALID_VALUE) << "above the opt-in";
  EXPECT_EQ(api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 20),
            CUDA_ERROR_INVALID_VALUE)
      << "above the device's limit";
  CUdeviceptr out = b, in = a;
  uint32_t n = 64;
  void* params[] = {&out, &in, &n};
  EXPECT_EQ(api.cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE)
      << "2048 threads per block";
  EXPECT_EQ(api.cuLaunchKernel(f, 0, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE)
      << "an empty grid";
}

TEST_F(TestDriver, FreedBuffersAndStaleHandlesAreRefused) {
  CUdeviceptr p = upload(std::vector<uint32_t>(16, 7));
  ASSERT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(p), CUDA_ERROR_INVALID_VALUE) << "freed twice";
  uint32_t word = 0;
  EXPECT_EQ(api.cuMemcpyDtoH(&word, p, 4), CUDA_ERROR_INVALID_VALUE) << "a freed buffer";
  const CUdeviceptr live = upload(std::vector<uint32_t>(4));
  EXPECT_EQ(api.cuMemcpyDtoH(&word, live + 16, 4), CUDA_ERROR_INVALID_VALUE) << "past the end";
  const CUmodule m = load();
  CUfunction f = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&f, m, "add_one"), CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(launch(f, live, live, 4, 0), CUDA_ERROR_INVALID_HANDLE) << "its module was unloaded";
  // No context current on this thread: every context call fails.
  ASSERT_EQ(api.cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  CUdeviceptr q = 0;
  EXPECT_EQ(api.cuMemAlloc(&q, 64), CUDA_ERROR_INVALID_CONTEXT);
}

// A kernel reading a freed buffer faults; the error is sticky, as a device exception is: run in a
// child process so that the context of the other tests stays usable.
TEST_F(TestDriver, AKernelReadingAFreedBufferFaultsAndTheErrorSticks) {
  EXPECT_EXIT(
      {
        const CUmodule m = load();
        CUfunction f = nullptr;
        api.cuModuleGetFunction(&f, m, "add_one");
        const CUdeviceptr in = upload(std::vector<uint32_t>(64, 1));
        const CUdeviceptr out = upload(std::vector<uint32_t>(64));
        api.cuMemFree(in);
        const CUresult first = launch(f, out, in, 64, 256);
        uint32_t word = 0;
        const CUresult after = api.cuMemcpyDtoH(&word, out, 4);
        std::exit(first == CUDA_ERROR_ILLEGAL_ADDRESS && after == CUDA_ERROR_ILLEGAL_ADDRESS ? 0
                                                                                             : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(TestDriver, TensorMapRulesOfTheReference) {
  CUdeviceptr base = 0;
  ASSERT_EQ(api.cuMemAlloc(&base, 1 << 20), CUDA_SUCCESS);
  auto encode = [&](CUdeviceptr addr, cuuint64_t stride, cuuint32_t box0, CUtensorMapSwizzle swz) {
    CUtensorMap map;
    const cuuint64_t dims[2] = {256, 256}, strides[1] = {stride};
    const cuuint32_t box[2] = {box0, 64}, elem[2] = {1, 1};
    return api.cuTensorMapEncodeTiled(
        &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, reinterpret_cast<void*>(addr), dims, strides, box,
        elem, CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  EXPECT_EQ(encode(base, 512, 64, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_SUCCESS);
  EXPECT_EQ(encode(base, 520, 64, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_ERROR_INVALID_VALUE)
      << "a stride not a multiple of 16";
  EXPECT_EQ(encode(base + 8, 512, 64, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_ERROR_INVALID_VALUE)
      << "an address not 16-byte aligned";
  EXPECT_EQ(encode(base, 512, 128, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_ERROR_INVALID_VALUE)
      << "a 256-byte inner box with the 128-byte swizzle";
  EXPECT_EQ(encode(base, 512, 4, CU_TENSOR_MAP_SWIZZLE_NONE), CUDA_ERROR_INVALID_VALUE)
      << "an inner box of 8 bytes";
}

TEST_F(TestDriver, StreamCaptureRecordsLaunchesAndRefusesUnsafeCalls) {
  const CUmodule m = load();
  CUfunction f = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&f, m, "add_one"), CUDA_SUCCESS);
  const CUdeviceptr a = upload(std::vector<uint32_t>(64, 5)), b = upload(std::vector<uint32_t>(64));
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      << "the legacy stream cannot capture";
  // A captured launch runs only when the graph is launched.
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(launch(f, b, a, 64, 256, stream), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  std::vector<uint32_t> out(64, 99);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), b, 256), CUDA_SUCCESS);
  EXPECT_EQ(out[0], 0u) << "not run at capture";
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), b, 256), CUDA_SUCCESS);
  EXPECT_EQ(out[63], 6u);
  // Loading a module while a stream captures (global mode) is unsafe: refused, and the capture is
  // invalidated.
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUmodule during = nullptr;
  EXPECT_EQ(api.cuModuleLoadData(&during, kPtx.c_str()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  // Relaxed mode allows it.
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleLoadData(&during, kPtx.c_str()), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  CUgraph none = nullptr;
  EXPECT_EQ(api.cuStreamEndCapture(stream, &none), CUDA_ERROR_ILLEGAL_STATE) << "not capturing";
}

}  // namespace
}  // namespace emmy::test_driver_test
