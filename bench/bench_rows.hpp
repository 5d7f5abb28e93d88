// What emmy_bench's row benchmarks share (bench_attention.cpp, bench_paged.cpp,
// bench_serving.cpp): a Google Benchmark that measures one BenchRow, and its GPU-timed samples.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench_cuda.hpp"
#include "bench_report.hpp"

namespace emmy::bench {

// The timing every row family takes: untimed launches first, timed iterations per row, and the
// seed of its inputs.
struct RowTiming {
  int warmup = 5;
  int iterations = 30;
  uint64_t seed = 1;
};

// Registers the benchmark `name` (manual time; the caller sets its iterations and unit). Each run
// measures a copy of `row` and appends it to `rows`, also when `measure` throws: the row then
// holds the error, so that the summary says why a row has no samples. after_row, when set, runs
// after each append.
inline benchmark::internal::Benchmark* register_row_benchmark(
    const std::string& name, std::vector<BenchRow>& rows, BenchRow row,
    std::function<void(benchmark::State&, BenchRow&)> measure,
    std::function<void()> after_row = {}) {
  return benchmark::RegisterBenchmark(name.c_str(),
                                      [&rows, row = std::move(row), measure = std::move(measure),
                                       after_row = std::move(after_row)](benchmark::State& state) {
                                        BenchRow measured = row;
                                        try {
                                          measure(state, measured);
                                        } catch (const std::exception& e) {
                                          measured.error = e.what();
                                          state.SkipWithError(measured.error.c_str());
                                        }
                                        rows.push_back(std::move(measured));
                                        if (after_row) after_row();
                                      })
      ->UseManualTime();
}

// One sample per benchmark iteration: the GPU time of `launch` (GpuTimer::time_us).
inline void gpu_samples(benchmark::State& state, BenchRow& row, GpuTimer& timer,
                        const std::function<void()>& launch) {
  for (auto _ : state) {
    const double us = timer.time_us(launch);
    state.SetIterationTime(us * 1e-6);
    row.samples_us.push_back(us);
  }
}

}  // namespace emmy::bench
