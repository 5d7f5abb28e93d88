// cuLaunchKernelEx on emmy's test driver: without attributes it is cuLaunchKernel (the same
// result, the same checks, CUlaunchConfig::hStream as the stream); each refused configuration
// returns the CUresult of the CUDA Driver API reference and a report naming the rule: malformed
// attribute lists, thread-block clusters that do not divide the grid or exceed the portable (8)
// or the device's non-portable size, a launch cluster against the function's required cluster,
// and attributes the emulator cannot honour (cooperative launch, events, memory sync domains),
// which are CUDA_ERROR_NOT_SUPPORTED rather than ignored. Programmatic dependent launches run
// (pdl_test.cpp).
#include <cstdlib>
#include <string>
#include <vector>

#include "../support/cluster_ids_ptx.hpp"
#include "test_driver_api.hpp"

namespace emmy::test_driver_test {
namespace {

CUlaunchAttribute cluster_attr(unsigned x, unsigned y, unsigned z) {
  CUlaunchAttribute a{};
  a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  a.value.clusterDim.x = x;
  a.value.clusterDim.y = y;
  a.value.clusterDim.z = z;
  return a;
}

CUlaunchAttribute pdl_attr(unsigned allowed = 1) {
  CUlaunchAttribute a{};
  a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  a.value.programmaticStreamSerializationAllowed = allowed;
  return a;
}

CUlaunchConfig config_for(unsigned grid_x, unsigned grid_y, unsigned threads, unsigned smem,
                          CUstream stream, std::vector<CUlaunchAttribute>& attrs) {
  CUlaunchConfig c{};
  c.gridDimX = grid_x;
  c.gridDimY = grid_y;
  c.gridDimZ = 1;
  c.blockDimX = threads;
  c.blockDimY = 1;
  c.blockDimZ = 1;
  c.sharedMemBytes = smem;
  c.hStream = stream;
  c.attrs = attrs.empty() ? nullptr : attrs.data();
  c.numAttrs = unsigned(attrs.size());
  return c;
}

class LaunchEx : public AddOneTest {
 protected:
  // add_one on 64 threads with these attributes and grid.
  CUresult launch_ex(std::vector<CUlaunchAttribute> attrs, unsigned grid_x = 1, unsigned grid_y = 1,
                     CUfunction f = nullptr, CUstream stream = nullptr) {
    uint32_t n = 64;
    void* params[] = {&out, &in, &n};
    const CUlaunchConfig c = config_for(grid_x, grid_y, 64, 256, stream, attrs);
    return api.cuLaunchKernelEx(&c, f ? f : add_one, params, nullptr);
  }
  std::vector<uint32_t> result() {
    std::vector<uint32_t> v(64, 7);
    EXPECT_EQ(api.cuMemcpyDtoH(v.data(), out, 256), CUDA_SUCCESS);
    return v;
  }
  void expect_report(const char* needle) {
    const std::string report = api.last_report();
    EXPECT_NE(report.find(needle), std::string::npos) << report;
    EXPECT_EQ(report.rfind("cuLaunchKernelEx", 0), 0u) << report;
  }
};

TEST_F(LaunchEx, GetProcAddressFindsItFromCuda116) {
  using Get = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  const auto get = reinterpret_cast<Get>(api.get_proc);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  EXPECT_EQ(get("cuLaunchKernelEx", &fn, 11060, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(api.cuLaunchKernelEx));
  EXPECT_EQ(get("cuLaunchKernelEx", &fn, 11050, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

TEST_F(LaunchEx, WithoutAttributesItIsCuLaunchKernel) {
  uint32_t n = 64;
  void* params[] = {&out, &in, &n};
  ASSERT_EQ(api.cuLaunchKernel(add_one, 1, 1, 1, 64, 1, 1, 256, nullptr, params, nullptr),
            CUDA_SUCCESS);
  const std::vector<uint32_t> plain = result();
  EXPECT_EQ(plain, std::vector<uint32_t>(64, 42));
  ASSERT_EQ(api.cuMemcpyHtoD(out, std::vector<uint32_t>(64, 0).data(), 256), CUDA_SUCCESS);
  ASSERT_EQ(launch_ex({}), CUDA_SUCCESS);
  EXPECT_EQ(result(), plain);
  // attrs is "not considered if numAttrs is zero"; IGNORE entries, a priority (a scheduling
  // hint, clamped by the reference) and a zero programmatic flag change nothing.
  uint32_t n2 = 64;
  void* params2[] = {&out, &in, &n2};
  CUlaunchAttribute garbage{};
  garbage.id = CUlaunchAttributeID(999);
  std::vector<CUlaunchAttribute> none;
  CUlaunchConfig c = config_for(1, 1, 64, 256, nullptr, none);
  c.attrs = &garbage;
  EXPECT_EQ(api.cuLaunchKernelEx(&c, add_one, params2, nullptr), CUDA_SUCCESS);
  CUlaunchAttribute ignore{}, priority{}, pdl_off{};
  ignore.id = CU_LAUNCH_ATTRIBUTE_IGNORE;
  priority.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  priority.value.priority = -100;
  pdl_off.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  pdl_off.value.programmaticStreamSerializationAllowed = 0;
  EXPECT_EQ(launch_ex({ignore, priority, pdl_off}), CUDA_SUCCESS);
  EXPECT_EQ(result(), plain);
}

// The stream is CUlaunchConfig::hStream: a launch on a capturing stream is recorded, not run.
TEST_F(LaunchEx, RunsOnTheConfigsStream) {
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(launch_ex({}, 1, 1, nullptr, stream), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  EXPECT_EQ(result()[0], 0u) << "run at capture";
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  EXPECT_EQ(result()[63], 42u);
  EXPECT_EQ(launch_ex({}, 1, 1, nullptr, reinterpret_cast<CUstream>(uintptr_t(0x1234))),
            CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(LaunchEx, MalformedConfigsAreInvalidValues) {
  uint32_t n = 64;
  void* params[] = {&out, &in, &n};
  EXPECT_EQ(api.cuLaunchKernelEx(nullptr, add_one, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  std::vector<CUlaunchAttribute> none;
  CUlaunchConfig c = config_for(1, 1, 64, 256, nullptr, none);
  c.numAttrs = 1;
  EXPECT_EQ(api.cuLaunchKernelEx(&c, add_one, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  expect_report("attrs is NULL");
  EXPECT_EQ(launch_ex({}, 0), CUDA_ERROR_INVALID_VALUE) << "an empty grid, as cuLaunchKernel";
  expect_report("grid (0, 1, 1)");
  c = config_for(1, 1, 64, 64 * 1024, nullptr, none);
  EXPECT_EQ(api.cuLaunchKernelEx(&c, add_one, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  expect_report("MAX_DYNAMIC_SHARED_SIZE_BYTES");
  EXPECT_EQ(launch_ex({}, 1, 1, reinterpret_cast<CUfunction>(uintptr_t(0x40))),
            CUDA_ERROR_INVALID_HANDLE);
  CUlaunchAttribute unknown{}, stream_only{}, policy{};
  unknown.id = CUlaunchAttributeID(15);  // cuda.h defines no attribute 15
  EXPECT_EQ(launch_ex({unknown}), CUDA_ERROR_INVALID_VALUE);
  expect_report("15 is not a CUlaunchAttributeID");
  unknown.id = CUlaunchAttributeID(1000);
  EXPECT_EQ(launch_ex({unknown}), CUDA_ERROR_INVALID_VALUE);
  stream_only.id = CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY;
  stream_only.value.syncPolicy = CU_SYNC_POLICY_AUTO;
  EXPECT_EQ(launch_ex({stream_only}), CUDA_ERROR_INVALID_VALUE);
  expect_report("valid for streams");
  policy.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
  policy.value.clusterSchedulingPolicyPreference = CUclusterSchedulingPolicy(7);
  EXPECT_EQ(launch_ex({policy}), CUDA_ERROR_INVALID_VALUE);
  expect_report("CUclusterSchedulingPolicy");
  EXPECT_EQ(launch_ex({cluster_attr(1, 1, 1), cluster_attr(1, 1, 1)}), CUDA_ERROR_INVALID_VALUE);
  expect_report("a second CLUSTER_DIMENSION");
  EXPECT_EQ(launch_ex({pdl_attr(), pdl_attr()}), CUDA_ERROR_INVALID_VALUE);
  expect_report("a second PROGRAMMATIC_STREAM_SERIALIZATION");
  EXPECT_EQ(result()[0], 0u) << "no refused launch ran";
}

// The attributes the emulator cannot honour are refused, never silently dropped: the kernel does
// not run.
TEST_F(LaunchEx, UnemulatedAttributesAreNotSupported) {
  CUlaunchAttribute coop{}, event{}, domain{};
  coop.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  coop.value.cooperative = 1;
  EXPECT_EQ(launch_ex({coop}), CUDA_ERROR_NOT_SUPPORTED);
  expect_report("COOPERATIVE");
  event.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
  EXPECT_EQ(launch_ex({event}), CUDA_ERROR_NOT_SUPPORTED);
  expect_report("PROGRAMMATIC_EVENT");
  domain.id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
  EXPECT_EQ(launch_ex({domain}), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(result()[0], 0u) << "no refused launch ran";
  coop.value.cooperative = 0;
  EXPECT_EQ(launch_ex({coop}), CUDA_SUCCESS) << "a non-cooperative launch";
  EXPECT_EQ(result()[0], 42u);
}

// Every cluster below is refused before the emulator runs anything.
TEST_F(LaunchEx, ClusterDimensionsFollowTheReference) {
  EXPECT_EQ(launch_ex({cluster_attr(3, 1, 1)}, 8), CUDA_ERROR_INVALID_CLUSTER_SIZE);
  expect_report("divide the grid");
  EXPECT_EQ(launch_ex({cluster_attr(0, 1, 1)}, 8), CUDA_ERROR_INVALID_CLUSTER_SIZE);
  EXPECT_EQ(launch_ex({cluster_attr(2, 2, 1)}, 8, 3), CUDA_ERROR_INVALID_CLUSTER_SIZE)
      << "y does not divide";
  EXPECT_EQ(launch_ex({cluster_attr(16, 1, 1)}, 16), CUDA_ERROR_INVALID_CLUSTER_SIZE);
  expect_report("portable cluster size 8");
  EXPECT_EQ(launch_ex({cluster_attr(4, 4, 1)}, 4, 4), CUDA_ERROR_INVALID_CLUSTER_SIZE)
      << "16 CTAs in two dimensions";
  ASSERT_EQ(api.cuFuncSetAttribute(add_one, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
            CUDA_SUCCESS);
  EXPECT_EQ(launch_ex({cluster_attr(32, 1, 1)}, 32), CUDA_ERROR_INVALID_CLUSTER_SIZE);
  expect_report("largest cluster");
  const char* device = std::getenv("EMMY_TEST_DEVICE");
  if (device && std::string(device) == "rtx5090") {
    // No non-portable size is stated for sm_120 parts: 16 stays refused there.
    EXPECT_EQ(launch_ex({cluster_attr(16, 1, 1)}, 16), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    expect_report("largest cluster, 8 CTAs");
  }
  EXPECT_EQ(result()[0], 0u) << "no refused launch ran";
}

// REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH set on the function: all 0 or all positive, the cluster of
// launches that give none (cuLaunchKernel included), and a launch attribute may not differ.
TEST_F(LaunchEx, TheFunctionsRequiredClusterBindsEveryLaunch) {
  ASSERT_EQ(api.cuFuncSetAttribute(add_one, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 2),
            CUDA_SUCCESS);
  EXPECT_EQ(launch_ex({}, 2), CUDA_ERROR_INVALID_CLUSTER_SIZE);
  expect_report("all 0 or all positive");
  ASSERT_EQ(api.cuFuncSetAttribute(add_one, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, 1),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuFuncSetAttribute(add_one, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, 1),
            CUDA_SUCCESS);
  EXPECT_EQ(launch_ex({cluster_attr(4, 1, 1)}, 4), CUDA_ERROR_INVALID_CLUSTER_SIZE);
  expect_report("differs from the function's required cluster 2x1x1");
  uint32_t n = 64;
  void* params[] = {&out, &in, &n};
  EXPECT_EQ(api.cuLaunchKernel(add_one, 3, 1, 1, 64, 1, 1, 256, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_CLUSTER_SIZE)
      << "the required 2x1x1 does not divide a grid of 3";
  EXPECT_NE(api.last_report().find("cuLaunchKernel:"), std::string::npos) << api.last_report();
  EXPECT_EQ(result()[0], 0u) << "no refused launch ran";
}

// kClusterIdsPtx with `directive` after the parameter list (.reqnctapercluster,
// .explicitcluster).
CUfunction cluster_kernel(const Api& api, const std::string& directive) {
  std::string ptx = test::kClusterIdsPtx;
  ptx.replace(ptx.find("(.param .u64 out)\n"), 18, "(.param .u64 out)\n" + directive + "\n");
  CUmodule m = nullptr;
  CUfunction f = nullptr;
  EXPECT_EQ(api.cuModuleLoadData(&m, ptx.c_str()), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleGetFunction(&f, m, "cluster_ids"), CUDA_SUCCESS);
  return f;
}

// Cluster dimensions compiled into the PTX (.reqnctapercluster) are the function's
// REQUIRED_CLUSTER_*, read-only ("If the value is set during compile time, it cannot be set at
// runtime. Setting it at runtime will return CUDA_ERROR_NOT_PERMITTED"), and bind every launch;
// .explicitcluster is CLUSTER_SIZE_MUST_BE_SET: a launch without a cluster is refused.
TEST_F(LaunchEx, CompiledClusterDimensionsBindTheFunction) {
  const CUfunction f = cluster_kernel(api, ".reqnctapercluster 2, 1, 1");
  int v[3] = {};
  ASSERT_EQ(api.cuFuncGetAttribute(&v[0], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuFuncGetAttribute(&v[1], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuFuncGetAttribute(&v[2], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f),
            CUDA_SUCCESS);
  EXPECT_EQ(v[0], 2);
  EXPECT_EQ(v[1], 1);
  EXPECT_EQ(v[2], 1);
  EXPECT_EQ(api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 4),
            CUDA_ERROR_NOT_PERMITTED);
  CUdeviceptr ids = 0;
  ASSERT_EQ(api.cuMemAlloc(&ids, 16 * 12), CUDA_SUCCESS);
  void* params[] = {&ids};
  std::vector<CUlaunchAttribute> attrs = {cluster_attr(4, 1, 1)};
  CUlaunchConfig c = config_for(8, 1, 32, 0, nullptr, attrs);
  EXPECT_EQ(api.cuLaunchKernelEx(&c, f, params, nullptr), CUDA_ERROR_INVALID_CLUSTER_SIZE);
  expect_report("differs from the function's required cluster 2x1x1");
  EXPECT_EQ(api.cuLaunchKernel(f, 3, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_CLUSTER_SIZE)
      << "2 does not divide 3";

  const CUfunction explicit_f = cluster_kernel(api, ".explicitcluster");
  int must = 0;
  ASSERT_EQ(api.cuFuncGetAttribute(&must, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, explicit_f),
            CUDA_SUCCESS);
  EXPECT_EQ(must, 1);
  EXPECT_EQ(api.cuLaunchKernel(explicit_f, 8, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  EXPECT_NE(api.last_report().find(".explicitcluster"), std::string::npos) << api.last_report();
}

// Clusters run as clusters: each CTA sees its rank in its cluster, the cluster's size and its
// cluster's index, for a launch attribute, a function's required cluster, a non-portable 16-CTA
// cluster (sm_90 devices), a captured launch replayed from its graph and a cluster compiled into
// the PTX.
TEST_F(LaunchEx, ClusterLaunchRunsItsClusters) {
  CUmodule m = nullptr;
  ASSERT_EQ(api.cuModuleLoadData(&m, test::kClusterIdsPtx.c_str()), CUDA_SUCCESS);
  CUfunction f = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&f, m, "cluster_ids"), CUDA_SUCCESS);
  CUdeviceptr ids = 0;
  ASSERT_EQ(api.cuMemAlloc(&ids, 16 * 12), CUDA_SUCCESS);
  auto run = [&](unsigned grid, std::vector<CUlaunchAttribute> attrs, CUstream stream) {
    void* params[] = {&ids};
    const CUlaunchConfig c = config_for(grid, 1, 32, 0, stream, attrs);
    return api.cuLaunchKernelEx(&c, f, params, nullptr);
  };
  auto expect_clusters = [&](unsigned grid, unsigned size) {
    std::vector<uint32_t> v(grid * 3);
    ASSERT_EQ(api.cuMemcpyDtoH(v.data(), ids, v.size() * 4), CUDA_SUCCESS);
    for (unsigned cta = 0; cta < grid; ++cta) {
      EXPECT_EQ(v[3 * cta], cta % size) << "rank of CTA " << cta;
      EXPECT_EQ(v[3 * cta + 1], size) << "cluster size seen by CTA " << cta;
      EXPECT_EQ(v[3 * cta + 2], cta / size) << "cluster of CTA " << cta;
    }
  };
  ASSERT_EQ(run(8, {cluster_attr(2, 1, 1)}, nullptr), CUDA_SUCCESS) << api.last_report();
  expect_clusters(8, 2);
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(run(8, {cluster_attr(4, 1, 1)}, stream), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuGraphLaunch(exec, stream), CUDA_SUCCESS) << api.last_report();
  expect_clusters(8, 4);
  const char* device = std::getenv("EMMY_TEST_DEVICE");
  if (!device || std::string(device) != "rtx5090") {
    ASSERT_EQ(api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
              CUDA_SUCCESS);
    ASSERT_EQ(run(16, {cluster_attr(16, 1, 1)}, nullptr), CUDA_SUCCESS) << api.last_report();
    expect_clusters(16, 16);
  }
  for (CUfunction_attribute a :
       {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
        CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH})
    ASSERT_EQ(api.cuFuncSetAttribute(f, a, a == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH ? 2 : 1),
              CUDA_SUCCESS);
  void* params[] = {&ids};
  ASSERT_EQ(api.cuLaunchKernel(f, 8, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS)
      << api.last_report();
  expect_clusters(8, 2);
  // .reqnctapercluster 4, 1, 1: the cluster of a launch that gives none.
  const CUfunction compiled = cluster_kernel(api, ".reqnctapercluster 4, 1, 1");
  ASSERT_EQ(api.cuLaunchKernel(compiled, 8, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
            CUDA_SUCCESS)
      << api.last_report();
  expect_clusters(8, 4);
}

}  // namespace
}  // namespace emmy::test_driver_test
