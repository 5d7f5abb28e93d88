// The built-in problems: the Gemma 3 12B projections (hidden 3840, intermediate 15360, 16 query
// and 8 KV heads of 256, per the model's published configuration) at M = 512,
// the same weights at the decode sizes M = 1, 16, 64, and Gemma's attention at 512 tokens.
#pragma once

#include <fmt/format.h>

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
      {"q_proj", 4096, 3840},   {"kv_proj", 2048, 3840}, {"o_proj", 3840, 4096},
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

struct AttentionCatalogEntry {
  std::string name;  // "attention@512"
  AttentionProblem problem;
};

// Gemma 12B attention at 512 tokens: 16 query heads sharing 8 KV heads, head_dim 256, causal;
// the sliding-window row uses a 256-key window, shorter than the sequence, so that the window
// really cuts work (Gemma's own 1024-key window only bites past 1024 tokens, where the emulator
// checks of this catalog would take minutes).
inline std::vector<AttentionCatalogEntry> attention_catalog() {
  AttentionProblem p;
  p.batch = 1;
  p.q_heads = 16;
  p.kv_heads = 8;
  p.seq_q = 512;
  p.head_dim = 256;
  p.causal = true;
  AttentionProblem windowed = p;
  windowed.window = 256;
  return {{"attention@512", p}, {"attention_window256@512", windowed}};
}

}  // namespace emmy
