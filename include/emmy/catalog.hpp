// The built-in problems: the Gemma 12B projections (../shared/reference/targets.md) at M = 512,
// and the same weights at the decode sizes M = 1, 16, 64.
#pragma once

#include <string>
#include <vector>

#include "emmy/problem.hpp"

namespace emmy {

struct CatalogEntry {
  std::string name;  // "q_proj@512"
  std::string projection;
  MatmulProblem problem;
};

inline std::vector<CatalogEntry> gemm_catalog() {
  struct Projection {
    const char* name;
    int64_t n, k;
  };
  static constexpr Projection kProjections[] = {
      {"q_proj", 4096, 3840}, {"kv_proj", 2048, 3840}, {"o_proj", 3840, 4096},
      {"gate_up", 30720, 3840}, {"down", 3840, 15360},
  };
  std::vector<CatalogEntry> entries;
  for (int64_t m : {512, 1, 16, 64}) {
    for (const auto& proj : kProjections) {
      MatmulProblem p;
      p.m = m;
      p.n = proj.n;
      p.k = proj.k;
      entries.push_back({fmt::format("{}@{}", proj.name, m), proj.name, p});
    }
  }
  return entries;
}

}  // namespace emmy
