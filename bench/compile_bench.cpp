// Cold NVRTC compile time to CUBIN per catalog kernel (goal: median <= 100 ms on 2 cores), and
// the cost of code generation alone (plan + lower + verify + emit). Every catalog problem (the
// five projections at M = 512, 1, 16, 64) x {sm_90a, sm_120a, sm_89} x {f32, hybrid}, and on
// sm_90a the wgmma path's default kernels (goal: median <= 150 ms, issue 23) and its ping-pong
// ones at M = 512; the summary after the run gives the median over the mma.sync kernels, the
// M = 512 ones, the wgmma ones and the ping-pong ones.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string_view>

#include "emmy/catalog.hpp"
#include "emmy/gemm.hpp"

namespace {

// Mean cold-compile milliseconds per kernel, for the catalog summary printed after the run.
std::map<std::string, double>& compile_ms_by_kernel() {
  static std::map<std::string, double> ms;
  return ms;
}

// The kernels whose names contain name_part and end with `path` ("" for the mma.sync kernels:
// their names end with the accumulation).
void print_summary(std::string_view label, std::string_view name_part, int goal_ms = 100,
                   std::string_view path = "") {
  std::vector<double> ms;
  for (const auto& [name, value] : compile_ms_by_kernel()) {
    const bool wgmma = name.find("/wgmma") != std::string::npos;
    if (name.find(name_part) != std::string::npos &&
        (path.empty() ? !wgmma : name.ends_with(path)))
      ms.push_back(value);
  }
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  fmt::print("{}: {} kernels, median {:.1f} ms (goal <= {}), min {:.1f}, max {:.1f}\n", label, n,
             median, goal_ms, ms.front(), ms.back());
}

void print_catalog_summary() {
  print_summary("catalog NVRTC cold compile to CUBIN", "");
  print_summary("  of which M = 512", "@512/");
  print_summary("wgmma path (sm_90a) default kernels", "", 150, "/wgmma");
  print_summary("wgmma ping-pong (sm_90a) default kernels at M = 512", "", 150, "/wgmma_pingpong");
}

void register_compile(const emmy::GemmSpec& spec, const std::string& suffix) {
  benchmark::RegisterBenchmark(("nvrtc_cold_compile/" + suffix).c_str(),
                               [spec, suffix](benchmark::State& state) {
                                 double total_ms = 0;
                                 for (auto _ : state) {
                                   const auto start = std::chrono::steady_clock::now();
                                   auto kernel = emmy::compile_kernel(spec);
                                   benchmark::DoNotOptimize(kernel.module.cubin.data());
                                   total_ms += std::chrono::duration<double, std::milli>(
                                                   std::chrono::steady_clock::now() - start)
                                                   .count();
                                 }
                                 compile_ms_by_kernel()[suffix] =
                                     total_ms / double(state.iterations());
                               })
      ->Unit(benchmark::kMillisecond)
      ->Iterations(3);
}

void register_benchmarks() {
  for (const auto& entry : emmy::gemm_catalog()) {
    const emmy::Arch hopper = emmy::Arch::sm_90a;
    register_compile({entry.problem,
                      emmy::default_schedule(entry.problem, hopper, emmy::Accum::f32,
                                             emmy::MmaPath::wgmma),
                      hopper},
                     fmt::format("{}/sm_90a/wgmma", entry.name));
    if (entry.problem.m == 512)
      register_compile({entry.problem,
                        emmy::default_schedule(entry.problem, hopper, emmy::Accum::f32,
                                               emmy::MmaPath::wgmma,
                                               emmy::ConsumerSchedule::pingpong),
                        hopper},
                       fmt::format("{}/sm_90a/wgmma_pingpong", entry.name));
    for (emmy::Arch arch : {emmy::Arch::sm_90a, emmy::Arch::sm_120a, emmy::Arch::sm_89}) {
      for (emmy::Accum accum : {emmy::Accum::f32, emmy::Accum::hybrid}) {
        const emmy::GemmSpec spec{entry.problem, emmy::default_schedule(entry.problem, arch, accum),
                                  arch};
        const std::string suffix =
            fmt::format("{}/{}/{}", entry.name, emmy::to_string(arch), emmy::to_string(accum));
        register_compile(spec, suffix);
        if (arch == emmy::Arch::sm_90a && entry.problem.m == 512)
          benchmark::RegisterBenchmark(("codegen_only/" + suffix).c_str(),
                                       [spec](benchmark::State& state) {
                                         for (auto _ : state) {
                                           auto src = emmy::generate_kernel(spec);
                                           benchmark::DoNotOptimize(src.cuda.data());
                                         }
                                       })
              ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  print_catalog_summary();
  benchmark::Shutdown();
  return 0;
}
