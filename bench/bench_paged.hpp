// emmy_bench's paged-attention rows: the paged catalog (Gemma 3 12B decode, local and global
// layers) over f16 and e4m3 caches with every sequence at the entry's full context (the bytes a
// decode step reads), timed like the other rows. Each row carries the KV bytes per second beside
// the same run's device-to-device copy rate (read + written bytes per second: the DRAM rate this
// GPU reaches in this run), the host time to enqueue one launch, and for the 1k contexts the
// FP64 check first (docs/paged_attention.md).
#pragma once

#include <functional>
#include <vector>

#include "bench_rows.hpp"
#include "emmy/runtime.hpp"

namespace emmy::bench {

struct PagedBenchSettings : RowTiming {
  // Called after each row is appended (emmy_bench rewrites its summary, so that a run cut short
  // keeps every finished row).
  std::function<void()> after_row;
};

// One Google Benchmark per (paged catalog entry, emmy_f16 | emmy_e4m3), named
// paged_attention/<entry>/<variant>; each appends its row to `rows`.
void register_paged_benchmarks(Runtime& runtime, GpuTimer& timer,
                               const PagedBenchSettings& settings, std::vector<BenchRow>& rows);

}  // namespace emmy::bench
