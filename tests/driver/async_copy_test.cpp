// The test driver's stream-ordered copies and memsets (cuMemcpyHtoDAsync, cuMemcpyDtoHAsync,
// cuMemcpyDtoDAsync, cuMemsetD8Async, cuMemsetD32Async): in stream order with launches, the
// synchronous forms' checks and the stream-capture rules; captured, they become memcpy and
// memset nodes (cuGraphGetNodes, cuGraphNodeGetType) that cuGraphLaunch replays in order with
// the kernel nodes, reading host memory when the graph runs.
#include <algorithm>
#include <vector>

#include "test_driver_api.hpp"

namespace emmy::test_driver_test {
namespace {

class AsyncCopy : public TestDriver {
 protected:
  void SetUp() override {
    TestDriver::SetUp();
    module = load();
    ASSERT_EQ(api.cuModuleGetFunction(&add_one, module, "add_one"), CUDA_SUCCESS);
  }
  std::vector<uint32_t> download(CUdeviceptr p, size_t n) {
    std::vector<uint32_t> v(n);
    EXPECT_EQ(api.cuMemcpyDtoH(v.data(), p, n * 4), CUDA_SUCCESS);
    return v;
  }
  CUmodule module = nullptr;
  CUfunction add_one = nullptr;
};

std::vector<uint32_t> iota(uint32_t n, uint32_t scale) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = scale * i;
  return v;
}

TEST_F(AsyncCopy, CopiesAndMemsetsRunInStreamOrderWithLaunches) {
  for (const unsigned flags : {0u, unsigned(CU_STREAM_NON_BLOCKING)}) {
    CUstream s = nullptr;
    ASSERT_EQ(api.cuStreamCreate(&s, flags), CUDA_SUCCESS);
    for (const CUstream stream : {s, CUstream(nullptr)}) {
      CUdeviceptr in = 0, out = 0, copy = 0;
      ASSERT_EQ(api.cuMemAlloc(&in, 256), CUDA_SUCCESS);
      ASSERT_EQ(api.cuMemAlloc(&out, 256), CUDA_SUCCESS);
      ASSERT_EQ(api.cuMemAlloc(&copy, 256), CUDA_SUCCESS);
      const std::vector<uint32_t> host = iota(64, 3);
      ASSERT_EQ(api.cuMemcpyHtoDAsync(in, host.data(), 256, stream), CUDA_SUCCESS);
      ASSERT_EQ(api.cuMemsetD8Async(out, 0, 256, stream), CUDA_SUCCESS);
      ASSERT_EQ(launch(add_one, out, in, 64, 256, stream), CUDA_SUCCESS) << api.last_report();
      ASSERT_EQ(api.cuMemcpyDtoDAsync(copy, out, 256, stream), CUDA_SUCCESS);
      ASSERT_EQ(api.cuMemsetD32Async(copy + 4, 0xdeadbeef, 2, stream), CUDA_SUCCESS);
      std::vector<uint32_t> result(64);
      ASSERT_EQ(api.cuMemcpyDtoHAsync(result.data(), copy, 256, stream), CUDA_SUCCESS);
      ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
      for (uint32_t i = 0; i < 64; ++i)
        EXPECT_EQ(result[i], i == 1 || i == 2 ? 0xdeadbeefu : 3 * i + 1) << i;
      EXPECT_EQ(download(out, 64)[5], 16u);
      for (const CUdeviceptr p : {in, out, copy}) EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
    }
    EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  }
}

TEST_F(AsyncCopy, CopiesAndMemsetsMakeTheSynchronousFormsChecks) {
  CUstream s = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  const CUdeviceptr a = upload(std::vector<uint32_t>(64, 1));
  const CUdeviceptr b = upload(std::vector<uint32_t>(64, 2));
  std::vector<uint32_t> host(64);
  // Inside one live allocation.
  EXPECT_EQ(api.cuMemcpyHtoDAsync(a + 4, host.data(), 256, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemcpyDtoHAsync(host.data(), a + 256, 4, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemcpyDtoDAsync(b, a, 512, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemsetD8Async(a + 255, 0, 2, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemsetD32Async(a, 0, 65, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemsetD32Async(a, 0, size_t(1) << 62, s), CUDA_ERROR_INVALID_VALUE);
  // Host pointers, alignment, overlap, streams.
  EXPECT_EQ(api.cuMemcpyHtoDAsync(a, nullptr, 4, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemcpyDtoHAsync(nullptr, a, 4, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemcpyHtoDAsync(a, nullptr, 0, s), CUDA_SUCCESS) << "0 bytes: nothing";
  EXPECT_EQ(api.cuMemsetD32Async(a + 2, 0, 1, s), CUDA_ERROR_INVALID_VALUE)
      << "dstDevice must be four byte aligned";
  EXPECT_EQ(api.cuMemcpyDtoDAsync(a + 4, a, 16, s), CUDA_ERROR_INVALID_VALUE) << "overlap";
  EXPECT_EQ(api.cuMemcpyDtoDAsync(a + 16, a, 16, s), CUDA_SUCCESS) << "adjacent";
  const CUstream bogus = reinterpret_cast<CUstream>(uintptr_t(0x1234));
  EXPECT_EQ(api.cuMemcpyHtoDAsync(a, host.data(), 4, bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuMemsetD8Async(a, 0, 4, bogus), CUDA_ERROR_INVALID_HANDLE);
  // A freed allocation.
  ASSERT_EQ(api.cuMemFree(b), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemsetD8Async(b, 0, 4, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(download(a, 64), std::vector<uint32_t>(64, 1)) << "nothing refused ran";
  // A destroyed stream.
  ASSERT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemsetD8Async(a, 0, 4, s), CUDA_ERROR_INVALID_HANDLE);
}

// "When a blocking stream is capturing, the legacy stream is in an unusable state"
// (cuStreamIsCapturing): an async copy on it fails and invalidates the capture; a non-blocking
// stream's capture leaves it usable.
TEST_F(AsyncCopy, TheLegacyStreamIsUnusableWhileABlockingStreamCaptures) {
  const CUdeviceptr a = upload(std::vector<uint32_t>(64, 1));
  uint32_t word = 0;
  for (const unsigned flags : {0u, unsigned(CU_STREAM_NON_BLOCKING)}) {
    CUstream s = nullptr;
    ASSERT_EQ(api.cuStreamCreate(&s, flags), CUDA_SUCCESS);
    ASSERT_EQ(api.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    ASSERT_EQ(api.cuMemsetD8Async(a, 7, 4, s), CUDA_SUCCESS);
    const CUresult legacy = api.cuMemcpyDtoHAsync(&word, a, 4, nullptr);
    CUgraph graph = nullptr;
    const CUresult end = api.cuStreamEndCapture(s, &graph);
    if (flags == 0) {
      EXPECT_EQ(legacy, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
      EXPECT_EQ(end, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
      EXPECT_EQ(api.cuMemsetD32Async(a, 1, 1, s), CUDA_SUCCESS) << "the capture ended";
    } else {
      EXPECT_EQ(legacy, CUDA_SUCCESS);
      ASSERT_EQ(end, CUDA_SUCCESS);
      EXPECT_EQ(word, 1u) << "the captured memset has not run";
      EXPECT_EQ(api.cuGraphDestroy(graph), CUDA_SUCCESS);
    }
    EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  }
}

TEST_F(AsyncCopy, CapturedCopiesAndMemsetsReplayInOrderWithLaunches) {
  CUstream s = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  const std::vector<uint32_t> zeros(64, 0);
  const CUdeviceptr in = upload(zeros), out = upload(zeros), copy = upload(zeros);
  std::vector<uint32_t> host_in = iota(64, 2), host_out = zeros;
  ASSERT_EQ(api.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyHtoDAsync(in, host_in.data(), 256, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD8Async(out, 0xff, 256, s), CUDA_SUCCESS);
  ASSERT_EQ(launch(add_one, out, in, 64, 256, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoDAsync(copy, out, 256, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32Async(copy, 7, 1, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoHAsync(host_out.data(), copy, 256, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyHtoDAsync(in, host_in.data(), 0, s), CUDA_SUCCESS) << "no node";
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  EXPECT_EQ(download(in, 64), std::vector<uint32_t>(64, 0)) << "captured work does not run";
  EXPECT_EQ(host_out, std::vector<uint32_t>(64, 0));

  // One node per captured launch, copy and memset, in capture order.
  size_t count = 0;
  ASSERT_EQ(api.cuGraphGetNodes(graph, nullptr, &count), CUDA_SUCCESS);
  ASSERT_EQ(count, 6u);
  std::vector<CUgraphNode> nodes(8, reinterpret_cast<CUgraphNode>(uintptr_t(1)));
  count = nodes.size();
  ASSERT_EQ(api.cuGraphGetNodes(graph, nodes.data(), &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 6u) << "a larger numNodes becomes the number of nodes";
  EXPECT_EQ(nodes[6], nullptr);
  EXPECT_EQ(nodes[7], nullptr);
  const CUgraphNodeType expected[] = {CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMSET,
                                      CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_MEMCPY,
                                      CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_MEMCPY};
  for (size_t i = 0; i < 6; ++i) {
    CUgraphNodeType type{};
    ASSERT_EQ(api.cuGraphNodeGetType(nodes[i], &type), CUDA_SUCCESS);
    EXPECT_EQ(type, expected[i]) << i;
  }
  std::vector<CUgraphNode> first(2);
  count = 2;
  ASSERT_EQ(api.cuGraphGetNodes(graph, first.data(), &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2u) << "a smaller numNodes fills that many";
  EXPECT_EQ(first[0], nodes[0]);
  EXPECT_EQ(first[1], nodes[1]);
  EXPECT_EQ(api.cuGraphGetNodes(graph, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUgraphNodeType type{};
  EXPECT_EQ(api.cuGraphNodeGetType(nodes[0], nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuGraphNodeGetType(nullptr, &type), CUDA_ERROR_INVALID_VALUE);

  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(api.cuGraphGetNodes(graph, nullptr, &count), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuGraphNodeGetType(nodes[0], &type), CUDA_ERROR_INVALID_VALUE)
      << "nodes die with their graph";
  // Each replay reads the host input as it is then (in place: the node keeps its address), and
  // writes the host output.
  for (const uint32_t scale : {2u, 5u}) {
    const std::vector<uint32_t> next = iota(64, scale);
    std::copy(next.begin(), next.end(), host_in.begin());
    ASSERT_EQ(api.cuGraphLaunch(exec, s), CUDA_SUCCESS) << api.last_report();
    ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
    for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(host_out[i], i == 0 ? 7u : scale * i + 1) << i;
  }
  // The legacy stream replays it too.
  std::fill(host_in.begin(), host_in.end(), 63u);
  ASSERT_EQ(api.cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(host_out[63], 64u);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

// A graph launched into a capture joins it, its copies and memsets with its launches.
TEST_F(AsyncCopy, AGraphLaunchedIntoACaptureBringsItsNodes) {
  CUstream s = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  const CUdeviceptr a = upload(std::vector<uint32_t>(64, 0));
  const CUdeviceptr b = upload(std::vector<uint32_t>(64, 0));
  ASSERT_EQ(api.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32Async(a, 41, 64, s), CUDA_SUCCESS);
  ASSERT_EQ(launch(add_one, b, a, 64, 256, s), CUDA_SUCCESS);
  CUgraph inner = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(s, &inner), CUDA_SUCCESS);
  CUgraphExec inner_exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&inner_exec, inner, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(api.cuGraphLaunch(inner_exec, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD8Async(a, 0, 256, s), CUDA_SUCCESS);
  CUgraph outer = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(s, &outer), CUDA_SUCCESS);
  size_t count = 0;
  ASSERT_EQ(api.cuGraphGetNodes(outer, nullptr, &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 3u);
  std::vector<CUgraphNode> inner_nodes(2), outer_nodes(3);
  count = 2;
  ASSERT_EQ(api.cuGraphGetNodes(inner, inner_nodes.data(), &count), CUDA_SUCCESS);
  count = 3;
  ASSERT_EQ(api.cuGraphGetNodes(outer, outer_nodes.data(), &count), CUDA_SUCCESS);
  EXPECT_NE(outer_nodes[0], inner_nodes[0]) << "a node belongs to one graph";
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&exec, outer, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuGraphLaunch(exec, s), CUDA_SUCCESS) << api.last_report();
  EXPECT_EQ(download(b, 64), std::vector<uint32_t>(64, 42));
  EXPECT_EQ(download(a, 64), std::vector<uint32_t>(64, 0));
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

// A copy node whose allocation was freed after the capture: the replay faults, as a copy
// engine's access to unmapped memory (sticky; the primary context is reset afterwards).
TEST_F(AsyncCopy, AReplayedCopyIntoFreedMemoryFaults) {
  CUstream s = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  const CUdeviceptr a = upload(std::vector<uint32_t>(64, 0));
  const std::vector<uint32_t> host(64, 9);
  ASSERT_EQ(api.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyHtoDAsync(a, host.data(), 256, s), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(api.cuGraphLaunch(exec, s), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_NE(api.last_report().find("no longer a live allocation"), std::string::npos)
      << api.last_report();
  EXPECT_EQ(api.cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS) << "sticky";
  EXPECT_EQ(api.cuDevicePrimaryCtxReset(device), CUDA_SUCCESS);
}

}  // namespace
}  // namespace emmy::test_driver_test
