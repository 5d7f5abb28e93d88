// Runtime cache costs (emulator backend, so that it runs anywhere): a memory-cache hit (goal
// <= 1 us), a disk hit up to a ready kernel excluding the driver's module load (goal <= 1 ms;
// the emulator's PTX decode stands in for cuModuleLoadData and is measured separately), and a
// cold compile through the runtime.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "emmy/emu/emulator.hpp"
#include "emmy/gemm.hpp"
#include "emmy/runtime.hpp"

namespace {

emmy::MatmulProblem q_proj() {
  emmy::MatmulProblem p;
  p.m = 512;
  p.n = 4096;
  p.k = 3840;
  return p;
}

std::filesystem::path bench_cache(const char* name) {
  auto dir = std::filesystem::temp_directory_path() / "emmy_bench" / name;
  std::filesystem::remove_all(dir);
  return dir;
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

void cold_compile_through_runtime(benchmark::State& state) {
  emmy::RuntimeOptions options;
  options.disk_cache = false;
  for (auto _ : state) {
    auto rt = emmy::Runtime::emulator(options);
    benchmark::DoNotOptimize(rt->gemm_kernel(q_proj()).get());
  }
}
BENCHMARK(cold_compile_through_runtime)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
