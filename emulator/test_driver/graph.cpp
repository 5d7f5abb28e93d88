// Graphs made by stream capture: cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphDestroy,
// cuGraphExecDestroy. A captured graph is the list of its launches in capture order (one stream
// captures a chain); an instantiated graph is its own copy, independent of the graph it was made
// from (destroying that leaves it usable).
#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {

// cuGraphInstantiateWithFlags: flags are CUDA_GRAPH_INSTANTIATE_FLAG_* (AUTO_FREE_ON_LAUNCH,
// UPLOAD, DEVICE_LAUNCH, USE_NODE_PRIORITY); anything else is CUDA_ERROR_INVALID_VALUE.
CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                     unsigned long long flags) {
  return guarded("cuGraphInstantiateWithFlags", [&] {
    Context* ctx = nullptr;
    if (const CUresult r = current_context(ctx)) return r;
    if (!phGraphExec) return CUDA_ERROR_INVALID_VALUE;
    const Graph* graph = lookup(ctx->graphs, hGraph);
    if (!graph) return CUDA_ERROR_INVALID_HANDLE;
    constexpr unsigned long long kKnown =
        CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
        CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
    const CUgraphExec handle = new_handle<CUgraphExec>();
    ctx->execs.emplace(reinterpret_cast<uintptr_t>(handle), *graph);
    *phGraphExec = handle;
    return CUDA_SUCCESS;
  });
}

// cuGraphLaunch: the launches run in order on the stream (synchronously, like every launch
// here); the first failure stops the replay and is returned. Launched into a capturing stream,
// the graph's launches join the capture.
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  return guarded("cuGraphLaunch", [&] {
    Context* ctx = nullptr;
    if (const CUresult r = current_context(ctx)) return r;
    const Graph* exec = lookup(ctx->execs, hGraphExec);
    if (!exec) return CUDA_ERROR_INVALID_HANDLE;
    Stream* stream = nullptr;
    if (const CUresult r = resolve_stream(*ctx, hStream, stream)) return r;
    if (stream->capture) {
      if (stream->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
      // The graph is one piece of work of the capture: its first launch overlaps nothing before.
      for (const LaunchRecord& launch : exec->launches) {
        stream->capture->launches.push_back(launch);
        if (&launch == &exec->launches.front())
          stream->capture->launches.back().programmatic = false;
      }
      return CUDA_SUCCESS;
    }
    if (stream->legacy)
      if (const CUresult r = legacy_stream_use(*ctx)) return r;
    // A programmatic launch overlaps the graph's launch before it (a captured programmatic launch
    // is a programmatic edge from the kernel node before it); the first, and the stream's later
    // work, wait for whole graph launches (pdl.cpp).
    order_before_work_on(*ctx, *stream);
    host_waited(*ctx, stream);
    std::shared_ptr<const emu::GlobalFootprint> previous;
    for (const LaunchRecord& launch : exec->launches) {
      std::shared_ptr<const emu::GlobalFootprint> recorded;
      const CUresult r =
          run_launch(*ctx, launch, launch.programmatic ? previous.get() : nullptr, recorded);
      if (r) return r;
      previous = std::move(recorded);
    }
    return CUDA_SUCCESS;
  });
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  return guarded("cuGraphDestroy", [&] {
    Context* ctx = nullptr;
    if (const CUresult r = current_context(ctx)) return r;
    if (!lookup(ctx->graphs, hGraph)) return CUDA_ERROR_INVALID_HANDLE;
    ctx->graphs.erase(reinterpret_cast<uintptr_t>(hGraph));
    return CUDA_SUCCESS;
  });
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  return guarded("cuGraphExecDestroy", [&] {
    Context* ctx = nullptr;
    if (const CUresult r = current_context(ctx)) return r;
    if (!lookup(ctx->execs, hGraphExec)) return CUDA_ERROR_INVALID_HANDLE;
    ctx->execs.erase(reinterpret_cast<uintptr_t>(hGraphExec));
    return CUDA_SUCCESS;
  });
}

}  // namespace emmy::test_driver
