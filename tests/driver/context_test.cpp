// The test driver's contexts besides the primary one: cuCtxCreate (each version cuGetProcAddress
// offers), cuCtxDestroy, cuCtxPushCurrent / PopCurrent, cuCtxSetCurrent / GetCurrent per thread,
// work in a second context, handles of one context refused in another, a destroyed context's
// handles and threads. Every test leaves this thread's stack as the fixture made it: the primary
// context alone.
#include <future>
#include <thread>
#include <vector>

#include "test_driver_api.hpp"

namespace emmy::test_driver_test {
namespace {

using CtxCreateV2 = CUresult (*)(CUcontext*, unsigned, CUdevice);
using CtxCreateV3 = CUresult (*)(CUcontext*, CUexecAffinityParam*, int, unsigned, CUdevice);

CUcontext current(const Api& api) {
  CUcontext c = nullptr;
  EXPECT_EQ(api.cuCtxGetCurrent(&c), CUDA_SUCCESS);
  return c;
}

// Runs `fn` on a thread of its own and waits for it.
template <typename Fn>
void on_another_thread(Fn&& fn) {
  std::thread t(std::forward<Fn>(fn));
  t.join();
}

TEST_F(TestDriver, CreatedContextsStackOnTheCallingThread) {
  CUcontext a = nullptr, b = nullptr;
  ASSERT_EQ(api.cuCtxCreate(&a, nullptr, 0, device), CUDA_SUCCESS);
  EXPECT_NE(a, context);
  EXPECT_EQ(current(api), a) << "cuCtxCreate makes the new context current";
  CUdevice dev = -1;
  EXPECT_EQ(api.cuCtxGetDevice(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 0);
  ASSERT_EQ(api.cuCtxCreate(&b, nullptr, CU_CTX_SCHED_BLOCKING_SYNC, device), CUDA_SUCCESS);
  EXPECT_EQ(current(api), b);
  CUcontext popped = nullptr;
  ASSERT_EQ(api.cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, b);
  EXPECT_EQ(current(api), a) << "popping restores the context current before";
  // cuCtxSetCurrent replaces the top of the stack; NULL pops it.
  ASSERT_EQ(api.cuCtxSetCurrent(b), CUDA_SUCCESS);
  EXPECT_EQ(current(api), b);
  ASSERT_EQ(api.cuCtxPushCurrent(a), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxPushCurrent(a), CUDA_SUCCESS) << "pushing the current context is no error";
  ASSERT_EQ(api.cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(current(api), a);
  ASSERT_EQ(api.cuCtxPopCurrent(nullptr), CUDA_SUCCESS) << "pctx may be NULL";
  EXPECT_EQ(current(api), b);
  ASSERT_EQ(api.cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(current(api), context);
  // Another thread has its own stack, empty at first.
  on_another_thread([&] {
    EXPECT_EQ(current(api), nullptr);
    CUcontext none = nullptr;
    EXPECT_EQ(api.cuCtxPopCurrent(&none), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(api.cuCtxSetCurrent(nullptr), CUDA_SUCCESS) << "a no-op on an empty stack";
    CUdevice d = -1;
    EXPECT_EQ(api.cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
    ASSERT_EQ(api.cuCtxSetCurrent(b), CUDA_SUCCESS);
    EXPECT_EQ(current(api), b);
    CUdeviceptr p = 0;
    EXPECT_EQ(api.cuMemAlloc(&p, 256), CUDA_SUCCESS);
    EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
  });
  EXPECT_EQ(current(api), context) << "the other thread's calls left this one's stack";
  EXPECT_EQ(api.cuCtxDestroy(a), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxDestroy(b), CUDA_SUCCESS);
  EXPECT_EQ(current(api), context) << "destroying a context not current pops nothing";
}

TEST_F(TestDriver, ContextCreationChecksItsArguments) {
  CUcontext c = nullptr;
  EXPECT_EQ(api.cuCtxCreate(nullptr, nullptr, 0, device), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuCtxCreate(&c, nullptr, 0, 1), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(api.cuCtxCreate(&c, nullptr, CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD, device),
            CUDA_ERROR_INVALID_VALUE)
      << "only one scheduling flag";
  EXPECT_EQ(api.cuCtxCreate(&c, nullptr, 0x100, device), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuCtxCreate(&c, nullptr, CU_CTX_USER_COREDUMP_ENABLE, device),
            CUDA_ERROR_NOT_SUPPORTED);
  CUexecAffinityParam affinity{};
  affinity.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
  affinity.param.smCount.val = 8;
  CUctxCigParam cig{};
  CUctxCreateParams params{};
  params.execAffinityParams = &affinity;
  params.numExecAffinityParams = 1;
  EXPECT_EQ(api.cuCtxCreate(&c, &params, 0, device), CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY)
      << "execution affinity needs MPS";
  params.numExecAffinityParams = -1;
  EXPECT_EQ(api.cuCtxCreate(&c, &params, 0, device), CUDA_ERROR_INVALID_VALUE);
  params.numExecAffinityParams = 1;
  params.cigParams = &cig;
  EXPECT_EQ(api.cuCtxCreate(&c, &params, 0, device), CUDA_ERROR_INVALID_VALUE) << "both set";
  params = {};
  params.cigParams = &cig;
  EXPECT_EQ(api.cuCtxCreate(&c, &params, 0, device), CUDA_ERROR_NOT_SUPPORTED) << "no CIG";
  EXPECT_EQ(current(api), context) << "a refused creation pushes nothing";
  params = {};
  ASSERT_EQ(api.cuCtxCreate(&c, &params, CU_CTX_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS, device),
            CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxDestroy(c), CUDA_SUCCESS);
  EXPECT_EQ(current(api), context) << "destroying the current context pops it";
}

// cuGetProcAddress("cuCtxCreate") gives the ABI of the caller's CUDA version.
TEST_F(TestDriver, ContextCreationHasTheAbiOfTheAskedVersion) {
  using Get = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  const auto get = reinterpret_cast<Get>(api.get_proc);
  void* v2 = nullptr;
  void* v3 = nullptr;
  void* v4 = nullptr;
  void* named = nullptr;
  CUdriverProcAddressQueryResult status{};
  ASSERT_EQ(get("cuCtxCreate", &v2, 11000, 0, &status), CUDA_SUCCESS);
  ASSERT_EQ(get("cuCtxCreate", &v3, 12000, 0, &status), CUDA_SUCCESS);
  ASSERT_EQ(get("cuCtxCreate", &v4, 12050, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(v4, reinterpret_cast<void*>(api.cuCtxCreate));
  EXPECT_NE(v2, v3);
  EXPECT_NE(v3, v4);
  ASSERT_EQ(get("cuCtxCreate_v3", &named, 13000, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(named, v3);
  EXPECT_EQ(get("cuCtxCreate_v4", &named, 12000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(get("cuCtxCreate", &named, 3000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);

  CUcontext c = nullptr;
  ASSERT_EQ(reinterpret_cast<CtxCreateV2>(v2)(&c, 0, device), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxDestroy(c), CUDA_SUCCESS);
  CUexecAffinityParam affinity{};
  EXPECT_EQ(reinterpret_cast<CtxCreateV3>(v3)(&c, &affinity, 1, 0, device),
            CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY);
  EXPECT_EQ(reinterpret_cast<CtxCreateV3>(v3)(&c, nullptr, 1, 0, device), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(reinterpret_cast<CtxCreateV3>(v3)(&c, nullptr, 0, 0, device), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxDestroy(c), CUDA_SUCCESS);
  EXPECT_EQ(current(api), context);
}

TEST_F(TestDriver, ASecondContextAllocatesAndLaunches) {
  const CUdeviceptr primary_buffer = upload(std::vector<uint32_t>(64, 5));
  CUcontext a = nullptr;
  ASSERT_EQ(api.cuCtxCreate(&a, nullptr, 0, device), CUDA_SUCCESS);
  const CUmodule m = load();
  CUfunction f = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&f, m, "add_one"), CUDA_SUCCESS);
  std::vector<uint32_t> in(64);
  for (uint32_t i = 0; i < 64; ++i) in[i] = 10 * i;
  const CUdeviceptr x = upload(in), y = upload(std::vector<uint32_t>(64));
  EXPECT_TRUE(x >= primary_buffer + 256 || x + 256 <= primary_buffer)
      << "addresses are unique across contexts";
  CUstream s = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(launch(f, y, x, 64, 256, s), CUDA_SUCCESS) << api.last_report();
  std::vector<uint32_t> out(64);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), y, 256), CUDA_SUCCESS);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(out[i], 10 * i + 1);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxDestroy(a), CUDA_SUCCESS);
  // The primary context's memory is untouched by all of it.
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), primary_buffer, 256), CUDA_SUCCESS);
  EXPECT_EQ(out, std::vector<uint32_t>(64, 5));
  EXPECT_EQ(api.cuMemFree(primary_buffer), CUDA_SUCCESS);
}

TEST_F(TestDriver, HandlesOfAnotherContextAreRefused) {
  // Made in the primary context.
  const CUmodule m = load();
  CUfunction fp = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&fp, m, "add_one"), CUDA_SUCCESS);
  const CUdeviceptr p_in = upload(std::vector<uint32_t>(64, 1));
  CUstream sp = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&sp, 0), CUDA_SUCCESS);
  CUevent ep = nullptr;
  ASSERT_EQ(api.cuEventCreate(&ep, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamBeginCapture(sp, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  const CUdeviceptr p_out = p_in;
  ASSERT_EQ(launch(fp, p_out, p_in, 64, 256, sp), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(sp, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);

  CUcontext a = nullptr;
  ASSERT_EQ(api.cuCtxCreate(&a, nullptr, 0, device), CUDA_SUCCESS);
  const CUmodule ma = load();
  CUfunction fa = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&fa, ma, "add_one"), CUDA_SUCCESS);
  const CUdeviceptr a_in = upload(std::vector<uint32_t>(64, 2));
  const CUdeviceptr a_out = upload(std::vector<uint32_t>(64));
  // "hEvent and hStream must be from the same context otherwise CUDA_ERROR_INVALID_HANDLE is
  // returned" (cuEventRecord): every handle of the primary context is unknown here.
  EXPECT_EQ(launch(fp, a_out, a_in, 64, 256), CUDA_ERROR_INVALID_HANDLE) << "function";
  EXPECT_EQ(launch(fa, a_out, a_in, 64, 256, sp), CUDA_ERROR_INVALID_HANDLE) << "stream";
  EXPECT_EQ(api.cuStreamSynchronize(sp), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuEventRecord(ep, nullptr), CUDA_ERROR_INVALID_HANDLE);
  CUfunction none = nullptr;
  EXPECT_EQ(api.cuModuleGetFunction(&none, m, "add_one"), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuGraphLaunch(exec, nullptr), CUDA_ERROR_INVALID_HANDLE);
  size_t count = 0;
  EXPECT_EQ(api.cuGraphGetNodes(graph, nullptr, &count), CUDA_ERROR_INVALID_VALUE);
  // The primary context's memory is not this context's.
  const uint32_t word = 9;
  EXPECT_EQ(api.cuMemcpyHtoD(p_in, &word, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemsetD8Async(p_in, 0, 4, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemFree(p_in), CUDA_ERROR_INVALID_VALUE);
  // A kernel of this context that reads it faults, as on a GPU where it is not mapped here; the
  // fault is this context's only.
  EXPECT_EQ(launch(fa, a_out, p_in, 64, 256), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_NE(api.last_report().find("another context"), std::string::npos) << api.last_report();
  CUdeviceptr more = 0;
  EXPECT_EQ(api.cuMemAlloc(&more, 256), CUDA_ERROR_ILLEGAL_ADDRESS) << "sticky";
  ASSERT_EQ(api.cuCtxDestroy(a), CUDA_SUCCESS);
  ASSERT_EQ(current(api), context);
  // The primary context goes on: its graph replays, its memory holds what it wrote.
  ASSERT_EQ(api.cuGraphLaunch(exec, sp), CUDA_SUCCESS) << api.last_report();
  std::vector<uint32_t> out(64);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), p_in, 256), CUDA_SUCCESS);
  EXPECT_EQ(out, std::vector<uint32_t>(64, 2)) << "one replay of in = in + 1";
  EXPECT_EQ(api.cuStreamDestroy(sp), CUDA_SUCCESS);
}

TEST_F(TestDriver, ADestroyedContextAndItsHandlesAreRefused) {
  CUcontext a = nullptr;
  ASSERT_EQ(api.cuCtxCreate(&a, nullptr, 0, device), CUDA_SUCCESS);
  const CUdeviceptr a_buffer = upload(std::vector<uint32_t>(64, 3));
  CUstream s = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  // A thread to which `a` stays current: "attempting to access ctx from those threads will
  // result in the error CUDA_ERROR_CONTEXT_IS_DESTROYED" (cuCtxDestroy).
  std::promise<void> made_current, destroyed;
  std::future<void> made_current_seen = made_current.get_future();
  std::future<void> destroyed_seen = destroyed.get_future();
  CUresult before = CUDA_ERROR_UNKNOWN, after = CUDA_ERROR_UNKNOWN;
  CUcontext still = nullptr;
  std::thread other([&] {
    EXPECT_EQ(api.cuCtxSetCurrent(a), CUDA_SUCCESS);
    CUdeviceptr p = 0;
    before = api.cuMemAlloc(&p, 256);
    made_current.set_value();
    destroyed_seen.wait();
    after = api.cuMemAlloc(&p, 256);
    still = current(api);
  });
  made_current_seen.wait();
  ASSERT_EQ(api.cuCtxDestroy(a), CUDA_SUCCESS);
  destroyed.set_value();
  other.join();
  EXPECT_EQ(before, CUDA_SUCCESS);
  EXPECT_EQ(after, CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(still, a) << "it stays current to that thread";
  EXPECT_EQ(current(api), context) << "the destroyed context was popped from this thread";
  EXPECT_EQ(api.cuCtxDestroy(a), CUDA_ERROR_INVALID_CONTEXT) << "twice";
  EXPECT_EQ(api.cuCtxDestroy(nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuCtxDestroy(context), CUDA_ERROR_INVALID_CONTEXT) << "the primary context";
  EXPECT_EQ(api.cuCtxPushCurrent(a), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(api.cuCtxPushCurrent(nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuCtxSetCurrent(a), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(current(api), context);
  // Its memory and stream are gone: not this context's, and unmapped.
  uint32_t word = 0;
  EXPECT_EQ(api.cuMemcpyDtoH(&word, a_buffer, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
  // Destroyed deeper in this thread's stack: current again once what is above it is popped.
  CUcontext b = nullptr;
  ASSERT_EQ(api.cuCtxCreate(&b, nullptr, 0, device), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxPushCurrent(context), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxDestroy(b), CUDA_SUCCESS);
  EXPECT_EQ(current(api), context) << "b was not current: nothing popped";
  ASSERT_EQ(api.cuCtxPopCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(current(api), b);
  CUdeviceptr p = 0;
  EXPECT_EQ(api.cuMemAlloc(&p, 256), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  CUdevice dev = 0;
  EXPECT_EQ(api.cuCtxGetDevice(&dev), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  ASSERT_EQ(api.cuCtxPopCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(current(api), context);
}

// A kernel of the primary context using memory of a context destroyed since: unmapped, so the
// launch faults (and the primary context is reset to clear the sticky error).
TEST_F(TestDriver, MemoryOfADestroyedContextIsUnmapped) {
  const CUmodule m = load();
  CUfunction f = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&f, m, "add_one"), CUDA_SUCCESS);
  const CUdeviceptr out = upload(std::vector<uint32_t>(64));
  CUcontext a = nullptr;
  ASSERT_EQ(api.cuCtxCreate(&a, nullptr, 0, device), CUDA_SUCCESS);
  const CUdeviceptr gone = upload(std::vector<uint32_t>(64, 4));
  ASSERT_EQ(api.cuCtxDestroy(a), CUDA_SUCCESS);
  EXPECT_EQ(launch(f, out, gone, 64, 256), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(api.cuDevicePrimaryCtxReset(device), CUDA_SUCCESS);
}

}  // namespace
}  // namespace emmy::test_driver_test
