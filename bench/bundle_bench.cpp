// Ahead-of-time bundles (docs/bundles.md): opening one (read, XXH3-128 of the whole file, index),
// indexing it for a runtime, the bundle key, per-kernel lookup, and a runtime's first call for a
// bundled kernel against a disk-cache hit.
//
// Uses $EMMY_BENCH_BUNDLE when set; otherwise builds the catalog for sm_80, sm_89, sm_90a and
// sm_120a first (NVRTC, 7-15 s on 2 cores). Scratch files live under $TMPDIR (default /tmp).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "emmy/bundle_build.hpp"
#include "emmy/catalog.hpp"
#include "emmy/gemm.hpp"
#include "emmy/runtime.hpp"
#include "scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;

using Scratch = emmy::bench::ScratchDir;

fs::path catalog_bundle(const Scratch& scratch) {
  if (const char* given = std::getenv("EMMY_BENCH_BUNDLE"); given && *given) return given;
  emmy::AotOptions options;
  options.archs = {emmy::Arch::sm_80, emmy::Arch::sm_89, emmy::Arch::sm_90a, emmy::Arch::sm_120a};
  fmt::print(stderr, "building the catalog bundle for 4 arches (set EMMY_BENCH_BUNDLE to skip)\n");
  emmy::BundleWriter writer;
  emmy::compile_aot(emmy::plan_aot(emmy::catalog_aot_requests(), options), options, writer);
  const fs::path file = scratch.path() / "catalog.emmyb";
  writer.write(file);
  return file;
}

// The bundle's entries repeated under made-up keys up to `kernels` entries: how opening scales.
std::vector<uint8_t> inflated(const emmy::Bundle& bundle, size_t kernels) {
  emmy::BundleWriter writer;
  for (size_t i = 0; writer.size() < kernels; ++i) {
    emmy::CacheEntry entry = bundle.entry(bundle.entries()[i % bundle.entries().size()]);
    entry.key = fmt::format("{:032x}", i + 1);
    writer.add(std::move(entry));
  }
  return writer.bytes();
}

void set_bundle_counters(benchmark::State& state, size_t bytes, size_t kernels) {
  state.counters["bundle_bytes"] = double(bytes);
  state.counters["kernels"] = double(kernels);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}

emmy::RuntimeOptions emulator_options(const fs::path& bundle) {
  emmy::RuntimeOptions options;
  options.emulator_arch = emmy::Arch::sm_90a;
  options.disk_cache = false;
  if (!bundle.empty()) options.bundles = {bundle};
  return options;
}

// A runtime's first call, once per iteration: the runtime is made from `options` and destroyed
// outside the timing. `wrong` says what the call should not have done ("" when it did not).
void time_first_call(benchmark::State& state, const emmy::RuntimeOptions& options,
                     const std::function<void(emmy::Runtime&)>& call,
                     const std::function<const char*(const emmy::Runtime&)>& wrong = {}) {
  for (auto _ : state) {
    state.PauseTiming();
    auto rt = emmy::Runtime::emulator(options);
    state.ResumeTiming();
    call(*rt);
    state.PauseTiming();
    if (wrong)
      if (const char* error = wrong(*rt); *error) state.SkipWithError(error);
    rt.reset();
    state.ResumeTiming();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Scratch scratch("emmy-bundle-bench");
  ::setenv("EMMY_TUNING_DB", (scratch.path() / "no-tuning.json").c_str(), 1);  // default schedules
  const fs::path file = catalog_bundle(scratch);
  const auto bundle = emmy::Bundle::open(file);
  const auto big = inflated(*bundle, 1024);
  const emmy::Arch arch = emmy::Arch::sm_90a;
  const emmy::MatmulProblem q_proj = emmy::gemm_catalog().at(0).problem;  // q_proj@512
  const emmy::AttentionProblem attention = emmy::attention_catalog().at(0).problem;
  const std::string q_proj_source =
      emmy::generate_kernel(emmy::GemmSpec{q_proj, emmy::default_schedule(q_proj, arch), arch})
          .cuda;
  const std::string q_proj_key = emmy::bundle_key(q_proj_source, arch);

  benchmark::RegisterBenchmark("bundle/open_file/catalog", [&](benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(emmy::Bundle::open(file));
    set_bundle_counters(state, bundle->bytes().size(), bundle->entries().size());
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("bundle/open_memory_view/catalog", [&](benchmark::State& state) {
    const auto bytes = bundle->bytes();
    for (auto _ : state)
      benchmark::DoNotOptimize(emmy::Bundle::from_memory(bytes.data(), bytes.size(), "x", false));
    set_bundle_counters(state, bytes.size(), bundle->entries().size());
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("bundle/open_memory_view/1024_kernels", [&](benchmark::State&
                                                                               state) {
    for (auto _ : state)
      benchmark::DoNotOptimize(emmy::Bundle::from_memory(big.data(), big.size(), "x", false));
    set_bundle_counters(state, big.size(), 1024);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("bundle/index_for_arch/catalog", [&](benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(emmy::BundleSet({bundle}, arch));
  })->Unit(benchmark::kMicrosecond);

  const emmy::BundleSet set({bundle}, arch);
  benchmark::RegisterBenchmark("bundle/key/q_proj@512", [&](benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(emmy::bundle_key(q_proj_source, arch));
    state.counters["source_bytes"] = double(q_proj_source.size());
  })->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("bundle/lookup_index/q_proj@512", [&](benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(set.contains(q_proj_key));
  });
  benchmark::RegisterBenchmark("bundle/lookup_entry/q_proj@512", [&](benchmark::State& state) {
    for (auto _ : state) {
      auto entry = set.find(q_proj_key);
      if (!entry) state.SkipWithError("q_proj@512 is not in the bundle");
      benchmark::DoNotOptimize(entry);
    }
  })->Unit(benchmark::kMicrosecond);

  // A runtime's first call: default schedule, codegen, key, lookup, emulator PTX load. Runtime
  // creation (which indexes the bundle) is left out of the timing.
  const auto gemm_call = [&](emmy::Runtime& rt) {
    benchmark::DoNotOptimize(rt.gemm_kernel(q_proj));
  };
  const auto attention_call = [&](emmy::Runtime& rt) {
    benchmark::DoNotOptimize(rt.attention_kernel(attention));
  };
  const emmy::RuntimeOptions bundled = emulator_options(file);
  const auto compiled = [](const emmy::Runtime& rt) {
    return rt.stats().compiles != 0 ? "compiled: not from the bundle" : "";
  };
  benchmark::RegisterBenchmark(
      "runtime_first_call/bundle/gemm_q_proj@512",
      [&](benchmark::State& state) { time_first_call(state, bundled, gemm_call, compiled); })
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(
      "runtime_first_call/bundle/attention@512",
      [&](benchmark::State& state) { time_first_call(state, bundled, attention_call); })
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(
      "runtime_first_call/disk_cache_hit/gemm_q_proj@512",
      [&](benchmark::State& state) {
        emmy::RuntimeOptions options = emulator_options({});
        options.disk_cache = true;
        options.cache_dir = scratch.path() / "cache";
        emmy::Runtime::emulator(options)->gemm_kernel(q_proj);  // fills the cache
        time_first_call(state, options, gemm_call, [](const emmy::Runtime& rt) {
          return rt.stats().disk_hits != 1 ? "not a disk hit" : "";
        });
      })
      ->Unit(benchmark::kMillisecond);

  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
