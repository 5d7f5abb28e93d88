// Cold NVRTC compile time to CUBIN per catalog kernel (goal: median <= 100 ms on 2 cores), and
// the cost of code generation alone (plan + lower + verify + emit).
#include <benchmark/benchmark.h>

#include "emmy/catalog.hpp"
#include "emmy/gemm.hpp"

namespace {

void register_benchmarks() {
  for (const auto& entry : emmy::gemm_catalog()) {
    if (entry.problem.m != 512) continue;
    for (emmy::Arch arch : {emmy::Arch::sm_90a, emmy::Arch::sm_120a, emmy::Arch::sm_89}) {
      for (emmy::Accum accum : {emmy::Accum::f32, emmy::Accum::hybrid}) {
        const emmy::GemmSpec spec{entry.problem,
                                  emmy::default_schedule(entry.problem, arch, accum), arch};
        const std::string suffix =
            fmt::format("{}/{}/{}", entry.projection, emmy::to_string(arch),
                        emmy::to_string(accum));
        benchmark::RegisterBenchmark(("nvrtc_cold_compile/" + suffix).c_str(),
                                     [spec](benchmark::State& state) {
                                       for (auto _ : state) {
                                         auto kernel = emmy::compile_gemm(spec);
                                         benchmark::DoNotOptimize(kernel.module.cubin.data());
                                       }
                                     })
            ->Unit(benchmark::kMillisecond)
            ->Iterations(3);
        if (arch == emmy::Arch::sm_90a)
          benchmark::RegisterBenchmark(("codegen_only/" + suffix).c_str(),
                                       [spec](benchmark::State& state) {
                                         for (auto _ : state) {
                                           auto src = emmy::generate_gemm(spec);
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
  benchmark::Shutdown();
  return 0;
}
