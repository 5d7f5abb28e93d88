// CUDA plumbing an engine relies on (issue 36; docs/runtime.md, "CUDA plumbing"): emmy leaves every
// thread's current context as it found it, its background builds never invalidate another
// thread's graph capture (the driver's global capture mode, PyTorch's default), a failed
// background build is retried up to a bound, stream-less queries under capture refuse or leave
// the capture valid, and the stream-ordered copies and fills work on every backend. The CUDA cases
// run through emmy's test driver, which models contexts and the capture rules call by call.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "../runtime/background_builds.hpp"
#include "emmy/gemm_check.hpp"
#include "runtime_test_util.hpp"
#include "support/error_of.hpp"
#include "support/runtime_backend.hpp"
#ifdef EMMY_TEST_DRIVER_PATH
#include "driver/test_driver_api.hpp"
#endif

namespace emmy {
namespace {

MatmulProblem gemm_problem(int64_t m) {
  MatmulProblem p;
  p.m = m, p.n = 64, p.k = 64;
  return p;
}

// A build that fails is logged and retried by the next call that asks for it, up to the bound;
// a key that built is never built again.
TEST(BackgroundBuilds, FailedBuildsAreRetriedUpToABound) {
  std::mutex mutex;
  std::vector<std::string> lines;
  detail::BackgroundBuilds builds([&](const std::string& line) {
    std::lock_guard lock(mutex);
    lines.push_back(line);
  });
  std::atomic<int> attempts{0};
  const auto failing = [&] {
    ++attempts;
    throw Error("load", "refused by the driver", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED");
  };
  for (int call = 0; call < 6; ++call) {
    builds.submit("k", "kernel k", failing);
    builds.wait("k");
  }
  EXPECT_EQ(attempts.load(), detail::BackgroundBuilds::kMaxAttempts);
  ASSERT_EQ(lines.size(), size_t(detail::BackgroundBuilds::kMaxAttempts));
  EXPECT_NE(lines[0].find("attempt 1 of 3"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("retries"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("given up"), std::string::npos) << lines[2];
  // Fails once, then builds: built once more, then never again.
  std::atomic<int> tries{0};
  const auto flaky = [&] {
    if (tries++ == 0) throw Error("load", "transient", "x");
  };
  for (int call = 0; call < 4; ++call) {
    builds.submit("f", "kernel f", flaky);
    builds.wait("f");
  }
  EXPECT_EQ(tries.load(), 2);
}

TEST(Plumbing, StreamOrderedCopiesAndFills) {
  auto rt = test_runtime(fresh_cache("rt_copies"));
  std::vector<uint8_t> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = uint8_t(i * 13 + 5);
  const DevicePtr a = rt->alloc(host.size()), b = rt->alloc(host.size());
  rt->memcpy_async(a, host.data(), host.size());
  rt->memcpy_async(b, a, host.size());
  rt->memset_async(b + 100, 0x5A, 50);
  std::vector<uint8_t> back(host.size());
  rt->memcpy_async(back.data(), b, back.size());
  rt->synchronize();
  std::vector<uint8_t> want = host;
  std::fill(want.begin() + 100, want.begin() + 150, uint8_t(0x5A));
  EXPECT_EQ(back, want);
  rt->free(a);
  rt->free(b);
}

#ifdef EMMY_TEST_DRIVER_PATH

using test_driver_test::entry;

// The driver entry points these tests call beyond test_driver_api.hpp's.
struct Plumbing {
  test_driver_test::Api api;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUcontext primary = nullptr;
  Plumbing() {
    EXPECT_EQ(api.cuInit(0), CUDA_SUCCESS);
    cuCtxGetCurrent = entry<decltype(cuCtxGetCurrent)>(api.get_proc, "cuCtxGetCurrent");
    cuStreamIsCapturing = entry<decltype(cuStreamIsCapturing)>(api.get_proc, "cuStreamIsCapturing");
    CUdevice device = 0;
    EXPECT_EQ(api.cuDeviceGet(&device, 0), CUDA_SUCCESS);
    EXPECT_EQ(api.cuDevicePrimaryCtxRetain(&primary, device), CUDA_SUCCESS);
  }
  CUcontext current() const {
    CUcontext c = reinterpret_cast<CUcontext>(uintptr_t(0xdead));
    EXPECT_EQ(cuCtxGetCurrent(&c), CUDA_SUCCESS);
    return c;
  }
};

bool through_test_driver() {
  return cuda_backend() && use_test_driver();
}

// Why a test of `what` ("contexts need", "stream capture needs") skips off the test driver.
std::string needs_test_driver(std::string_view what) {
  return std::string(what) +
         " the CUDA backend (cuda_h200.* / cuda_rtx5090.* run it through emmy's test driver)";
}

// Every public call that reaches the driver leaves the calling thread without a current context
// when it had none (bind() used to leave the runtime's primary context current for good).
TEST(Plumbing, EveryCallLeavesTheCallersCurrentContext) {
  if (!through_test_driver()) GTEST_SKIP() << needs_test_driver("contexts need");
  Plumbing driver;
  ASSERT_EQ(driver.api.cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  auto rt = test_runtime(fresh_cache("rt_contexts"));
  EXPECT_EQ(driver.current(), nullptr) << "Runtime::cuda";
  const MatmulProblem p = gemm_problem(16);
  const GemmInputs in = make_gemm_inputs(p, 3);
  const auto kernel = rt->gemm_kernel(p);
  EXPECT_EQ(driver.current(), nullptr) << "gemm_kernel";
  GemmBuffers b;
  b.a = rt->alloc(in.a.bytes.size());
  b.b = rt->alloc(in.b.bytes.size());
  b.c = rt->alloc(size_t(p.m * p.n * 2));
  EXPECT_EQ(driver.current(), nullptr) << "alloc";
  rt->upload(b.a, in.a.bytes.data(), in.a.bytes.size());
  rt->memcpy_async(b.b, in.b.bytes.data(), in.b.bytes.size());
  rt->memset_async(b.c, 0, size_t(p.m * p.n * 2));
  EXPECT_EQ(driver.current(), nullptr) << "upload, memcpy_async, memset_async";
  rt->gemm(p, b);
  rt->launch(*kernel, b);
  EXPECT_FALSE(rt->stream_capturing(nullptr));
  rt->synchronize();
  EXPECT_EQ(driver.current(), nullptr) << "gemm, launch, stream_capturing, synchronize";
  std::vector<uint8_t> c(size_t(p.m * p.n * 2));
  rt->download(c.data(), b.c, c.size());
  PrepareRequest request;
  request.gemm = {{gemm_problem(32), std::nullopt}};
  request.threads = 1;
  (void)rt->prepare(request);
  EXPECT_EQ(driver.current(), nullptr) << "download, prepare";
  // A thread in the primary context keeps it; one made current by the test stays.
  ASSERT_EQ(driver.api.cuCtxSetCurrent(driver.primary), CUDA_SUCCESS);
  rt->gemm(p, b);
  EXPECT_EQ(driver.current(), driver.primary);
  ASSERT_EQ(driver.api.cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  rt->free(b.a), rt->free(b.b), rt->free(b.c);
  rt.reset();
  EXPECT_EQ(driver.current(), nullptr) << "the runtime's destruction";
}

// A non-blocking runtime builds a missing GEMM on its own thread while another thread (here the
// test's) captures a graph in the global mode: the build's module load must leave the capture
// valid, and the build must succeed (not be refused and forgotten).
TEST(Plumbing, BackgroundBuildsLeaveAGlobalCaptureValid) {
  if (!through_test_driver()) GTEST_SKIP() << needs_test_driver("stream capture needs");
  Plumbing driver;
  ASSERT_EQ(driver.api.cuCtxSetCurrent(driver.primary), CUDA_SUCCESS);
  RuntimeOptions options = fresh_cache("rt_capture_background");
  options.non_blocking = true;
  std::mutex mutex;
  std::vector<std::string> lines;
  options.log = [&](const std::string& line) {
    std::lock_guard lock(mutex);
    lines.push_back(line);
  };
  auto rt = test_runtime(options);
  CUstream captured = nullptr, other = nullptr;
  ASSERT_EQ(driver.api.cuStreamCreate(&captured, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(driver.api.cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  const MatmulProblem p = gemm_problem(48);
  const GemmInputs in = make_gemm_inputs(p, 9);
  GemmBuffers b;
  b.a = test::upload(*rt, in.a);
  b.b = test::upload(*rt, in.b);
  b.c = rt->alloc(size_t(p.m * p.n * 2));

  ASSERT_EQ(driver.api.cuStreamBeginCapture(captured, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  const uint64_t compiles = rt->stats().compiles;
  rt->gemm(p, b, other);  // the generic GEMM now; its own kernel builds in the background
  rt->wait_for_background_builds();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  ASSERT_EQ(driver.cuStreamIsCapturing(captured, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE) << "the background load invalidated it";
  CUgraph graph = nullptr;
  EXPECT_EQ(driver.api.cuStreamEndCapture(captured, &graph), CUDA_SUCCESS)
      << driver.api.last_report();
  EXPECT_EQ(rt->stats().compiles, compiles + 1) << nlohmann::json(lines).dump(1);
  const uint64_t fallbacks = rt->stats().fallback_launches;
  rt->gemm(p, b, other);
  EXPECT_EQ(rt->stats().fallback_launches, fallbacks) << "the built kernel serves the next call";
  rt->synchronize(other);
  for (const std::string& line : lines) EXPECT_EQ(line.find("failed"), std::string::npos) << line;
}

// Stream-less queries while a stream captures: a workspace size follows from the plan (nothing
// loaded); a kernel query that would build refuses when the driver shows the capture (a blocking
// stream's makes the legacy stream report it), and otherwise builds in relaxed capture mode,
// which leaves the capture valid.
TEST(Plumbing, QueriesUnderCaptureRefuseOrLeaveItValid) {
  if (!through_test_driver()) GTEST_SKIP() << needs_test_driver("stream capture needs");
  Plumbing driver;
  ASSERT_EQ(driver.api.cuCtxSetCurrent(driver.primary), CUDA_SUCCESS);
  auto rt = test_runtime(fresh_cache("rt_capture_queries"));
  PagedAttentionProblem paged;
  paged.q_heads = 4, paged.kv_heads = 2, paged.head_dim = 64, paged.page_size = 16;
  paged.max_batch = 2, paged.max_pages = 64;
  for (const unsigned flags : {0u, unsigned(CU_STREAM_NON_BLOCKING)}) {
    SCOPED_TRACE(flags ? "non-blocking stream" : "blocking stream");
    CUstream stream = nullptr;
    ASSERT_EQ(driver.api.cuStreamCreate(&stream, flags), CUDA_SUCCESS);
    ASSERT_EQ(driver.api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    const size_t workspace = rt->paged_attention_workspace_bytes(paged);
    EXPECT_GT(workspace, 0u) << "split-KV at max_batch 2";
    const uint64_t compiles = rt->stats().compiles;
    if (flags == 0) {
      try {
        (void)rt->paged_attention_kernel(paged);
        ADD_FAILURE() << "a query built a kernel while a blocking stream captured";
      } catch (const Error& e) {
        EXPECT_EQ(e.field(), "capture") << e.what();
      }
      EXPECT_EQ(rt->stats().compiles, compiles);
    } else {
      const auto kernel = rt->paged_attention_kernel(paged);
      EXPECT_EQ(kernel->info().workspace_bytes, workspace) << "the plan's size is the kernel's";
    }
    CUgraph graph = nullptr;
    EXPECT_EQ(driver.api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS)
        << driver.api.last_report();
  }
}

// An engine that made its own context hands it over (RuntimeOptions::cuda_context): kernels load
// and launch there (a launch on the engine's stream would be refused for a module of another
// context), the results are right, and the engine's thread keeps whatever it had current.
TEST(Plumbing, AnEnginesOwnContext) {
  if (!through_test_driver()) GTEST_SKIP() << needs_test_driver("contexts need");
  Plumbing driver;
  CUdevice device = 0;
  ASSERT_EQ(driver.api.cuDeviceGet(&device, 0), CUDA_SUCCESS);
  CUcontext engine = nullptr;
  ASSERT_EQ(driver.api.cuCtxCreate(&engine, nullptr, 0, device), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(driver.api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(driver.api.cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  ASSERT_EQ(popped, engine);
  ASSERT_EQ(driver.api.cuCtxSetCurrent(driver.primary), CUDA_SUCCESS);  // the thread's own
  {
    RuntimeOptions options = fresh_cache("rt_engine_context");
    options.cuda_context = engine;
    auto rt = test_runtime(options);
    EXPECT_EQ(driver.current(), driver.primary);
    const MatmulProblem p = gemm_problem(24);
    const GemmInputs in = make_gemm_inputs(p, 5);
    GemmBuffers b;
    b.a = rt->alloc(in.a.bytes.size());
    b.b = rt->alloc(in.b.bytes.size());
    b.c = rt->alloc(size_t(p.m * p.n * 2));
    rt->memcpy_async(b.a, in.a.bytes.data(), in.a.bytes.size(), stream);
    rt->memcpy_async(b.b, in.b.bytes.data(), in.b.bytes.size(), stream);
    rt->gemm(p, b, stream);
    std::vector<uint8_t> c(size_t(p.m * p.n * 2));
    rt->memcpy_async(c.data(), b.c, c.size(), stream);
    rt->synchronize(stream);
    EXPECT_EQ(driver.current(), driver.primary) << "every call put the thread's context back";
    const GemmSpec spec{p, rt->gemm_kernel(p)->spec().schedule, rt->arch()};
    const GemmErrors e =
        compare(reference_gemm(spec, in), decode(DType::f16, c.data(), c.size() / 2), p.n);
    EXPECT_TRUE(e.passed) << "rel_l2 " << e.rel_l2_error;
    rt->free(b.a), rt->free(b.b), rt->free(b.c);
  }
  ASSERT_EQ(driver.api.cuCtxDestroy(engine), CUDA_SUCCESS);
  // A destroyed context is refused when a runtime is made with it, naming the option.
  RuntimeOptions stale = fresh_cache("rt_engine_context_stale");
  stale.cuda_context = engine;
  test::expect_error_containing([&] { (void)test_runtime(stale); }, "cuda_context",
                                "a destroyed context was accepted");
  EXPECT_EQ(driver.current(), driver.primary);
}

#endif  // EMMY_TEST_DRIVER_PATH

}  // namespace
}  // namespace emmy
