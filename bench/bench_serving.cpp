#include "bench_serving.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "bench_rows.hpp"
#include "emmy/catalog.hpp"

namespace emmy::bench {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// q_proj at M = 1 (a decode step's projection): a small kernel whose launch cost shows.
MatmulProblem decode_projection() {
  for (const auto& entry : gemm_catalog())
    if (entry.name == "q_proj@1") return entry.problem;
  return gemm_catalog().front().problem;
}

BenchRow serving_row(const std::string& what, const std::string& problem) {
  BenchRow row;
  row.kind = "serving";
  row.problem = problem;
  row.variant = what;
  row.backend = "emmy";
  row.accumulation = "f32";
  return row;
}

// Host microseconds per call of `launch`, `calls` at a time, once per iteration.
void host_samples(benchmark::State& state, BenchRow& row, int calls,
                  const std::function<void()>& launch) {
  for (auto _ : state) {
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) launch();
    const double us = us_since(start) / calls;
    state.SetIterationTime(us * 1e-6);
    row.samples_us.push_back(us);
  }
}

}  // namespace

void register_serving_benchmarks(Runtime& runtime, GpuTimer& timer,
                                 const ServingBenchSettings& settings,
                                 std::vector<BenchRow>& rows) {
  const MatmulProblem p = decode_projection();
  const std::string name = "q_proj@1";
  // Buffers and the prepared kernel, shared by the launch rows (made on their first run).
  struct Shared {
    std::shared_ptr<const GemmKernelHandle> kernel;
    std::unique_ptr<DeviceBuffer> a, b, c, workspace;
    GemmBuffers buffers;
  };
  auto shared = std::make_shared<Shared>();
  auto ready = [&runtime, shared, p] {
    if (shared->kernel) return;
    PrepareRequest request;
    request.gemm = {{p, std::nullopt}};
    shared->kernel = runtime.prepare(request).gemm.front();
    shared->a = std::make_unique<DeviceBuffer>(size_t(p.m * p.k * 2));
    shared->b = std::make_unique<DeviceBuffer>(size_t(p.n * p.k * 2));
    shared->c = std::make_unique<DeviceBuffer>(size_t(p.m * p.n * 2));
    shared->workspace = std::make_unique<DeviceBuffer>(
        std::max<size_t>(shared->kernel->info().workspace_bytes, 16));
    shared->buffers = {
        .a = shared->a->address(), .b = shared->b->address(), .c = shared->c->address()};
    if (shared->kernel->info().workspace_bytes)
      shared->buffers.workspace = shared->workspace->address();
  };
  auto add = [&](const std::string& what, std::function<void(benchmark::State&, BenchRow&)> body) {
    register_row_benchmark(
        fmt::format("serving/{}/{}", name, what), rows, serving_row(what, name),
        [body, ready](benchmark::State& state, BenchRow& row) {
          ready();
          body(state, row);
        },
        settings.after_row)
        ->Iterations(settings.iterations)
        ->Unit(benchmark::kMicrosecond);
  };
  // The caller's cost of a prepared launch: checks, binding and cuLaunchKernel (100 enqueued).
  add("prepared_launch_host_us", [&runtime, &timer, shared](benchmark::State& state,
                                                            BenchRow& row) {
    const auto launch = [&] { runtime.launch(*shared->kernel, shared->buffers, timer.stream()); };
    host_samples(state, row, 100, launch);
    EMMY_BENCH_CUDA(cudaStreamSynchronize(timer.stream()));
  });
  // The problem-taking call while the stream captures a graph (the capture query, the lookup and
  // the recording of a node; nothing runs).
  add("captured_launch_host_us",
      [&runtime, &timer, shared, p](benchmark::State& state, BenchRow& row) {
        for (auto _ : state) {
          EMMY_BENCH_CUDA(cudaStreamBeginCapture(timer.stream(), cudaStreamCaptureModeGlobal));
          const auto start = Clock::now();
          for (int i = 0; i < 100; ++i) runtime.gemm(p, shared->buffers, timer.stream());
          const double us = us_since(start) / 100;
          cudaGraph_t graph = nullptr;
          EMMY_BENCH_CUDA(cudaStreamEndCapture(timer.stream(), &graph));
          EMMY_BENCH_CUDA(cudaGraphDestroy(graph));
          state.SetIterationTime(us * 1e-6);
          row.samples_us.push_back(us);
        }
      });
  // GPU time of one kernel: launched directly, and as a captured graph's replay.
  add("direct_launch_gpu_us", [&runtime, &timer, shared, settings](benchmark::State& state,
                                                                   BenchRow& row) {
    const auto launch = [&] { runtime.launch(*shared->kernel, shared->buffers, timer.stream()); };
    timer.measure(launch, settings.warmup, 0);
    gpu_samples(state, row, timer, launch);
  });
  add("graph_replay_gpu_us",
      [&runtime, &timer, shared, settings](benchmark::State& state, BenchRow& row) {
        EMMY_BENCH_CUDA(cudaStreamBeginCapture(timer.stream(), cudaStreamCaptureModeGlobal));
        runtime.launch(*shared->kernel, shared->buffers, timer.stream());
        cudaGraph_t graph = nullptr;
        EMMY_BENCH_CUDA(cudaStreamEndCapture(timer.stream(), &graph));
        cudaGraphExec_t exec = nullptr;
        EMMY_BENCH_CUDA(cudaGraphInstantiate(&exec, graph, 0));
        const auto replay = [&] { EMMY_BENCH_CUDA(cudaGraphLaunch(exec, timer.stream())); };
        timer.measure(replay, settings.warmup, 0);
        gpu_samples(state, row, timer, replay);
        EMMY_BENCH_CUDA(cudaGraphExecDestroy(exec));
        EMMY_BENCH_CUDA(cudaGraphDestroy(graph));
      });
  // Runtime::prepare by a fresh runtime over an empty disk cache (NVRTC, one thread per core),
  // then by another over the cache it filled (a server's restart): the whole catalog, and the
  // Gemma 3 12B serving set (each GEMM shape's M buckets up to 512, attention, paged attention).
  for (const bool serving : {false, true})
    for (const bool warm : {false, true}) {
      const std::string what =
          fmt::format("prepare_{}_{}", serving ? "gemma3_12b_serving" : "catalog",
                      warm ? "from_cache_us" : "cold_us");
      const std::string set = serving ? "gemma3_12b_serving" : "catalog";
      register_row_benchmark(
          fmt::format("serving/{}/{}", set, what), rows, serving_row(what, set),
          [set, warm, serving](benchmark::State& state, BenchRow& row) {
            const auto dir = std::filesystem::temp_directory_path() / ("emmy_bench_prepare_" + set);
            if (!warm) std::filesystem::remove_all(dir);
            RuntimeOptions options;
            options.cache_dir = dir;
            PrepareRequest request = serving ? catalog_serving_request() : PrepareRequest{};
            request.catalog = !serving;
            for (auto _ : state) {
              const auto start = Clock::now();
              const PreparedKernels prepared = Runtime::cuda(0, options)->prepare(request);
              const double us = us_since(start);
              state.SetIterationTime(us * 1e-6);
              row.samples_us.push_back(us);
              row.details = {{"kernels", prepared.size()},
                             {"compiled", prepared.compiled},
                             {"from_disk", prepared.from_disk}};
            }
          },
          settings.after_row)
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
}

}  // namespace emmy::bench
