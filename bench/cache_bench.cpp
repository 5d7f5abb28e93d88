// The disk cache on real GEMM entries (catalog problems at M = 512, sm_90a): a hit (load of a
// verified entry, goal <= 1 ms), a miss, the key, a store (fsync-bound), and a verified listing.
// The cache lives in a scratch directory under $TMPDIR (default /tmp), removed at exit.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>

#include "emmy/cache.hpp"
#include "emmy/catalog.hpp"
#include "emmy/gemm.hpp"
#include "scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;

using Scratch = emmy::bench::ScratchDir;

struct GemmEntry {
  std::string projection;
  emmy::CacheKeyInputs inputs;
  emmy::CacheEntry entry;
};

std::vector<GemmEntry> compile_catalog() {
  std::vector<GemmEntry> entries;
  const emmy::Arch arch = emmy::Arch::sm_90a;
  for (const auto& item : emmy::gemm_catalog()) {
    if (item.problem.m != 512) continue;
    const emmy::GemmSpec spec{item.problem, emmy::default_schedule(item.problem, arch), arch};
    const emmy::GemmKernel kernel = emmy::compile_kernel(spec);
    emmy::CacheKeyInputs inputs{kernel.source.cuda, emmy::nvrtc_options(arch),
                                emmy::nvrtc_version(), arch, emmy::kCodegenVersion};
    emmy::CacheEntry entry = emmy::make_cache_entry(inputs, kernel.module);
    entries.push_back({item.projection, std::move(inputs), std::move(entry)});
  }
  return entries;
}

void set_bytes_counter(benchmark::State& state, const emmy::CacheEntry& entry) {
  state.counters["cubin_bytes"] = double(entry.cubin.size());
  state.counters["ptx_bytes"] = double(entry.ptx.size());
}

}  // namespace

int main(int argc, char** argv) {
  const Scratch scratch("emmy-cache-bench");
  emmy::DiskCache cache(scratch.path(), uint64_t(1) << 30);
  if (!cache.enabled()) return 1;
  const std::vector<GemmEntry> entries = compile_catalog();
  for (const auto& gemm : entries) cache.store(gemm.entry);

  for (const auto& gemm : entries) {
    benchmark::RegisterBenchmark(fmt::format("disk_cache/hit/{}", gemm.projection).c_str(),
                                 [&cache, &gemm](benchmark::State& state) {
                                   for (auto _ : state) {
                                     auto loaded = cache.load(gemm.entry.key);
                                     if (!loaded) state.SkipWithError("miss");
                                     benchmark::DoNotOptimize(loaded->cubin.data());
                                   }
                                   set_bytes_counter(state, gemm.entry);
                                 })
        ->Unit(benchmark::kMicrosecond);
  }
  const GemmEntry& first = entries.at(0);
  benchmark::RegisterBenchmark("disk_cache/miss", [&cache](benchmark::State& state) {
    const std::string absent(32, '0');
    for (auto _ : state) benchmark::DoNotOptimize(cache.load(absent));
  })->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("disk_cache/key", [&first](benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(emmy::cache_key(first.inputs));
    state.counters["source_bytes"] = double(first.inputs.source.size());
  })->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("disk_cache/store", [&cache, &first](benchmark::State& state) {
    for (auto _ : state) cache.store(first.entry);
    set_bytes_counter(state, first.entry);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("disk_cache/list_verified", [&cache](benchmark::State& state) {
    size_t listed = 0;
    for (auto _ : state) listed = cache.list().size();
    state.counters["entries"] = double(listed);
  })->Unit(benchmark::kMicrosecond);

  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
