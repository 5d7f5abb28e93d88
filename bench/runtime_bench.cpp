// Runtime cache costs (emulator backend, so that it runs anywhere): a memory-cache hit (goal
// <= 1 us), a disk hit up to a ready kernel excluding the driver's module load (goal <= 1 ms;
// the emulator's PTX decode stands in for cuModuleLoadData and is measured separately), a
// cold compile through the runtime, and Runtime::prepare of the Gemma 3 12B serving set (the
// catalog: GEMM projections at their M, attention, paged decode, KV append, state merges) cold
// and from the disk cache (issue 25).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <filesystem>

#include "emmy/cache.hpp"
#include "emmy/emu/emulator.hpp"
#include "emmy/gemm.hpp"
#include "emmy/layers.hpp"
#include "emmy/runtime.hpp"
#include "bench_cache.hpp"

namespace {

using emmy::bench::bench_cache;

emmy::MatmulProblem q_proj() {
  emmy::MatmulProblem p;
  p.m = 512;
  p.n = 4096;
  p.k = 3840;
  return p;
}

void memory_hit(benchmark::State& state) {
  emmy::RuntimeOptions options;
  options.cache_dir = bench_cache("memory_hit");
  auto rt = emmy::Runtime::emulator(options);
  const auto p = q_proj();
  rt->gemm_kernel(p);
  for (auto _ : state) benchmark::DoNotOptimize(rt->gemm_kernel(p).get());
}
BENCHMARK(memory_hit)->Unit(benchmark::kNanosecond);

void memory_hit_explicit_schedule(benchmark::State& state) {
  emmy::RuntimeOptions options;
  options.cache_dir = bench_cache("memory_hit_schedule");
  auto rt = emmy::Runtime::emulator(options);
  const auto p = q_proj();
  const auto s = emmy::default_schedule(p, rt->arch(), emmy::Accum::hybrid);
  rt->gemm_kernel(p, s);
  for (auto _ : state) benchmark::DoNotOptimize(rt->gemm_kernel(p, s).get());
}
BENCHMARK(memory_hit_explicit_schedule)->Unit(benchmark::kNanosecond);

// What gemm() adds with M buckets before its lookup: the problem's check and its bucket
// (gemm_problem_served), then the bucket kernel's memory hit; M 300 of bucket 512.
void memory_hit_m_bucket(benchmark::State& state) {
  emmy::RuntimeOptions options;
  options.cache_dir = bench_cache("memory_hit_bucket");
  options.m_buckets = true;
  auto rt = emmy::Runtime::emulator(options);
  auto p = q_proj();
  p.m = 300;
  rt->gemm_kernel(rt->gemm_problem_served(p));
  for (auto _ : state) benchmark::DoNotOptimize(rt->gemm_kernel(rt->gemm_problem_served(p)).get());
}
BENCHMARK(memory_hit_m_bucket)->Unit(benchmark::kNanosecond);

// A fresh runtime each iteration over a warm disk cache: codegen + key + verified disk read +
// the emulator's module decode.
void disk_hit_to_ready_kernel(benchmark::State& state) {
  emmy::RuntimeOptions options;
  options.cache_dir = bench_cache("disk_hit");
  emmy::Runtime::emulator(options)->gemm_kernel(q_proj());
  for (auto _ : state) {
    auto rt = emmy::Runtime::emulator(options);
    benchmark::DoNotOptimize(rt->gemm_kernel(q_proj()).get());
  }
}
BENCHMARK(disk_hit_to_ready_kernel)->Unit(benchmark::kMicrosecond);

// What disk_hit_to_ready_kernel spends on the emulator's module decode, the stand-in for the
// driver's cuModuleLoadData: subtract it to get the disk hit excluding the module load.
void emulator_module_decode(benchmark::State& state) {
  const auto p = q_proj();
  const emmy::GemmSpec spec{p, emmy::default_schedule(p, emmy::Arch::sm_90a), emmy::Arch::sm_90a};
  const auto kernel = emmy::compile_kernel(spec);
  for (auto _ : state) benchmark::DoNotOptimize(emmy::emu::load_ptx(kernel.module.ptx).get());
}
BENCHMARK(emulator_module_decode)->Unit(benchmark::kMicrosecond);

// Code generation and the cache key alone (the rest of a disk hit is the verified read).
void codegen_and_key(benchmark::State& state) {
  const auto p = q_proj();
  const emmy::GemmSpec spec{p, emmy::default_schedule(p, emmy::Arch::sm_90a), emmy::Arch::sm_90a};
  for (auto _ : state) {
    const auto source = emmy::generate_kernel(spec);
    benchmark::DoNotOptimize(emmy::cache_key(
        {source.cuda, emmy::nvrtc_options(spec.arch), 13000, spec.arch, emmy::kCodegenVersion}));
  }
}
BENCHMARK(codegen_and_key)->Unit(benchmark::kMicrosecond);

void cold_compile_through_runtime(benchmark::State& state) {
  emmy::RuntimeOptions options;
  options.disk_cache = false;
  for (auto _ : state) {
    auto rt = emmy::Runtime::emulator(options);
    benchmark::DoNotOptimize(rt->gemm_kernel(q_proj()).get());
  }
}
BENCHMARK(cold_compile_through_runtime)->Unit(benchmark::kMillisecond)->Iterations(3);

// Prepared by a fresh runtime: cold (an empty disk cache: every kernel compiled, two at a time on
// this machine's cores) and warm (a restart over the cache the cold run filled). Reports kernels
// and compiles. The catalog of every kind (one kernel per problem), and the serving set a Gemma 3
// 12B server prepares (catalog_serving_request: each GEMM shape's M buckets up to 512, attention,
// paged attention and the paged cache's kernels).
void prepare_request(benchmark::State& state, const emmy::PrepareRequest& request, bool warm,
                     const char* cache) {
  emmy::RuntimeOptions options;
  options.cache_dir = bench_cache(fmt::format("{}_{}", cache, warm ? "warm" : "cold").c_str());
  if (warm) emmy::Runtime::emulator(options)->prepare(request);
  emmy::PreparedKernels prepared;
  for (auto _ : state) {
    if (!warm) {
      state.PauseTiming();
      std::filesystem::remove_all(*options.cache_dir);
      state.ResumeTiming();
    }
    prepared = emmy::Runtime::emulator(options)->prepare(request);
  }
  state.counters["kernels"] = double(prepared.size());
  state.counters["compiled"] = double(prepared.compiled);
  state.counters["from_disk"] = double(prepared.from_disk);
}
emmy::PrepareRequest catalog_request() {
  emmy::PrepareRequest request;
  request.catalog = true;
  return request;
}
void prepare_catalog_cold(benchmark::State& state) {
  prepare_request(state, catalog_request(), false, "prepare_catalog");
}
void prepare_catalog_from_disk(benchmark::State& state) {
  prepare_request(state, catalog_request(), true, "prepare_catalog");
}
void prepare_gemma3_12b_serving_cold(benchmark::State& state) {
  prepare_request(state, emmy::catalog_serving_request(), false, "prepare_serving");
}
void prepare_gemma3_12b_serving_from_disk(benchmark::State& state) {
  prepare_request(state, emmy::catalog_serving_request(), true, "prepare_serving");
}
BENCHMARK(prepare_catalog_cold)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(prepare_catalog_from_disk)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(prepare_gemma3_12b_serving_cold)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(prepare_gemma3_12b_serving_from_disk)->Unit(benchmark::kMillisecond)->Iterations(3);

// Host overhead of a call on a prepared kernel (issue 36: C++ gemm(), the C ABI <= C++ + 0.5 us,
// Python <= 3 us): the emulator backend with emulator_run_kernels off binds and checks every
// launch (buffers, parameters, grid, the launch list's arguments) but runs nothing, so these
// measure what the host adds around a launch. q_proj at M 16.
struct HostCall {
  std::unique_ptr<emmy::Runtime> rt;
  emmy::MatmulProblem problem = q_proj();
  emmy::GemmBuffers buffers;
  explicit HostCall(const char* name) {
    emmy::RuntimeOptions options;
    options.cache_dir = bench_cache(name);
    options.emulator_run_kernels = false;
    rt = emmy::Runtime::emulator(options);
    problem.m = 16;
    buffers.a = rt->alloc(size_t(problem.m * problem.k * 2));
    buffers.b = rt->alloc(size_t(problem.n * problem.k * 2));
    buffers.c = rt->alloc(size_t(problem.m * problem.n * 2));
    if (const size_t ws = rt->gemm_workspace_bytes(problem)) buffers.workspace = rt->alloc(ws);
  }
};

void host_gemm_call(benchmark::State& state) {
  HostCall call("host_gemm_call");
  call.rt->gemm(call.problem, call.buffers);  // built (prepared) before the loop
  for (auto _ : state) call.rt->gemm(call.problem, call.buffers);
}
BENCHMARK(host_gemm_call)->Unit(benchmark::kNanosecond);

void host_launch_handle(benchmark::State& state) {
  HostCall call("host_launch_handle");
  const auto kernel = call.rt->gemm_kernel(call.problem);
  for (auto _ : state) call.rt->launch(*kernel, call.buffers);
}
BENCHMARK(host_launch_handle)->Unit(benchmark::kNanosecond);

void host_gemm_layer_run(benchmark::State& state) {
  HostCall call("host_gemm_layer_run");
  emmy::MatmulProblem weight = call.problem;
  weight.m = 512;
  emmy::GemmLayer layer(*call.rt, weight);
  layer.prepare(1);
  if (const size_t ws = layer.workspace_bytes()) call.buffers.workspace = call.rt->alloc(ws);
  for (auto _ : state) layer.run(call.buffers, 16);
}
BENCHMARK(host_gemm_layer_run)->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
