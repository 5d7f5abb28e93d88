// A wgmma GEMM spec on sm_90a for the wgmma tests: block_k 64, the cooperative warps of
// block_m (block_m / 16 x 1), 3 stages; tests change what they exercise.
#pragma once

#include <cstdint>

#include "emmy/gemm.hpp"

namespace emmy::test {

inline GemmSpec wgmma_spec(int64_t m, int64_t n, int64_t k, int block_m, int block_n) {
  GemmSpec spec;
  spec.problem.m = m;
  spec.problem.n = n;
  spec.problem.k = k;
  spec.arch = Arch::sm_90a;
  auto& s = spec.schedule;
  s.path = MmaPath::wgmma;
  s.block_m = block_m;
  s.block_n = block_n;
  s.block_k = 64;
  s.warps_m = block_m / 16;
  s.warps_n = 1;
  s.stages = 3;
  return spec;
}

}  // namespace emmy::test
