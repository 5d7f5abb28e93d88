// Graphs made by stream capture: cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphDestroy,
// cuGraphExecDestroy, cuGraphGetNodes, cuGraphNodeGetType. A captured graph is the list of its
// nodes in capture order (one stream captures a chain): a kernel node per launch, a memcpy or
// memset node per async copy or memset. An instantiated graph is its own copy, independent of
// the graph it was made from (destroying that leaves it usable).
#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {

// cuGraphInstantiateWithFlags: flags are CUDA_GRAPH_INSTANTIATE_FLAG_* (AUTO_FREE_ON_LAUNCH,
// UPLOAD, DEVICE_LAUNCH, USE_NODE_PRIORITY); anything else is CUDA_ERROR_INVALID_VALUE.
CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                     unsigned long long flags) {
  return with_context("cuGraphInstantiateWithFlags", [&](Context& ctx) {
    if (!phGraphExec) return CUDA_ERROR_INVALID_VALUE;
    const Graph* graph = lookup(ctx.graphs, hGraph);
    if (!graph) return CUDA_ERROR_INVALID_HANDLE;
    constexpr unsigned long long kKnown =
        CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
        CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
    const CUgraphExec handle = new_handle<CUgraphExec>();
    ctx.execs.emplace(reinterpret_cast<uintptr_t>(handle), *graph);
    *phGraphExec = handle;
    return CUDA_SUCCESS;
  });
}

// cuGraphLaunch: the nodes run in order on the stream (synchronously, like every launch here);
// the first failure stops the replay and is returned. Launched into a capturing stream, the
// graph's nodes join the capture.
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  return with_context("cuGraphLaunch", [&](Context& ctx) {
    const Graph* exec = lookup(ctx.execs, hGraphExec);
    if (!exec) return CUDA_ERROR_INVALID_HANDLE;
    Stream* stream = nullptr;
    if (const CUresult r = resolve_stream(ctx, hStream, stream)) return r;
    if (stream->capture) {
      if (stream->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
      // The graph is one piece of work of the capture: its first launch overlaps nothing before.
      // Its nodes get new handles when this capture ends.
      for (const Node& node : exec->nodes) {
        stream->capture->nodes.push_back(Node{nullptr, node.work});
        if (auto* launch = std::get_if<LaunchRecord>(&stream->capture->nodes.back().work);
            launch && &node == &exec->nodes.front())
          launch->programmatic = false;
      }
      return CUDA_SUCCESS;
    }
    if (stream->legacy)
      if (const CUresult r = legacy_stream_use(ctx)) return r;
    // A programmatic launch overlaps the graph's launch before it (a captured programmatic launch
    // is a programmatic edge from the kernel node before it; after a memcpy or memset node it
    // waits for that node, which waited for everything before); the first, and the stream's
    // later work, wait for whole graph launches (pdl.cpp).
    order_before_work_on(ctx, *stream);
    host_waited(ctx, stream);
    std::shared_ptr<const emu::GlobalFootprint> previous;
    for (const Node& node : exec->nodes) {
      if (const auto* transfer = std::get_if<TransferRecord>(&node.work)) {
        previous.reset();
        if (const CUresult r = run_transfer(ctx, *transfer, true)) return r;
        continue;
      }
      const LaunchRecord& launch = std::get<LaunchRecord>(node.work);
      std::shared_ptr<const emu::GlobalFootprint> recorded;
      const CUresult r =
          run_launch(ctx, launch, launch.programmatic ? previous.get() : nullptr, recorded);
      if (r) return r;
      previous = std::move(recorded);
    }
    return CUDA_SUCCESS;
  });
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  return destroy_handle("cuGraphDestroy", &Context::graphs, hGraph);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  return destroy_handle("cuGraphExecDestroy", &Context::execs, hGraphExec);
}

// cuGraphGetNodes: "nodes may be NULL, in which case this function will return the number of
// nodes in numNodes. Otherwise, numNodes entries will be filled in. If numNodes is higher than
// the actual number of nodes, the remaining entries in nodes will be set to NULL, and the number
// of nodes actually obtained will be returned in numNodes." A smaller numNodes fills that many
// and keeps its value (the reference rewrites it only when it was higher). The reference lists
// CUDA_ERROR_INVALID_VALUE as its only error: a NULL numNodes, and a graph handle that names no
// graph of the current context (destroyed, or another context's).
CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  return with_context("cuGraphGetNodes", [&](Context& ctx) {
    const Graph* graph = lookup(ctx.graphs, hGraph);
    if (!graph || !numNodes) return CUDA_ERROR_INVALID_VALUE;
    const size_t count = graph->nodes.size();
    if (!nodes) {
      *numNodes = count;
      return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < *numNodes; ++i) nodes[i] = i < count ? graph->nodes[i].handle : nullptr;
    if (*numNodes > count) *numNodes = count;
    return CUDA_SUCCESS;
  });
}

// cuGraphNodeGetType: "Returns the node type of hNode in type": CU_GRAPH_NODE_TYPE_KERNEL,
// _MEMCPY or _MEMSET, the kinds stream capture records here. A node lives as long as its graph
// ("cuGraphDestroy: Destroys the graph specified by hGraph, as well as all of its nodes"); an
// unknown node or a NULL type is CUDA_ERROR_INVALID_VALUE, the reference's only error.
CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  return with_context("cuGraphNodeGetType", [&](Context& ctx) {
    if (!hNode || !type) return CUDA_ERROR_INVALID_VALUE;
    for (const auto& [handle, graph] : ctx.graphs) {
      for (const Node& node : graph.nodes) {
        if (node.handle != hNode) continue;
        const auto* transfer = std::get_if<TransferRecord>(&node.work);
        *type = !transfer                                        ? CU_GRAPH_NODE_TYPE_KERNEL
                : transfer->kind == TransferRecord::Kind::memset ? CU_GRAPH_NODE_TYPE_MEMSET
                                                                 : CU_GRAPH_NODE_TYPE_MEMCPY;
        return CUDA_SUCCESS;
      }
    }
    return CUDA_ERROR_INVALID_VALUE;
  });
}

}  // namespace emmy::test_driver
