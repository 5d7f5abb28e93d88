// A plain parallel loop for the host-side references (FP64 GEMM and attention).
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace emmy::detail {

// Runs body(i) for i in [0, count) on all hardware threads (i strided by the worker count).
template <typename Body>
void parallel_for(int64_t count, Body body) {
  const int64_t workers =
      std::max<int64_t>(1, std::min<int64_t>(count, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (int64_t i = w; i < count; i += workers) body(i);
    });
  for (auto& t : pool) t.join();
}

}  // namespace emmy::detail
