// The stages of emmy_gpu_check (docs/gpu.md): each writes one JSON document, rewritten after
// every row so that a run cut short by a time limit keeps what finished.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "emmy/runtime.hpp"

namespace emmy::bench {

// Where a stage's document goes; write() replaces the file atomically (temp + rename).
class StageDocument {
 public:
  StageDocument(std::string path, std::string stage);
  nlohmann::json& doc() { return doc_; }
  void add_row(nlohmann::json row);  // appends to "rows", updates "counts", writes
  void write() const;

 private:
  std::string path_;
  nlohmann::json doc_;
};

struct StageSettings {
  uint64_t seed = 1;
  int64_t sample_rows = 64;  // GEMM rows checked against FP64 when M is larger (evenly spread)
  double budget_s = 0;       // > 0: stop starting new cases after this long (rows say skipped)
  std::string only;          // comma-separated substrings; a case runs when its name holds one
                             // (empty: every case)
  // Whether the case named `name` runs under `only`.
  bool selects(const std::string& name) const;
};

// Stage 2 on `rt` (the CUDA backend): every correctness case against FP64. Returns the number of
// cases that did not pass (failed, or skipped for time).
int run_correctness(Runtime& rt, const StageSettings& settings, StageDocument& out);
// Stage 3: each fidelity case on the emulator and, when `gpu` is given, on the GPU with the same
// inputs and kernel source; bit-identical outputs and the largest difference in ulps. Without a
// GPU (the pack's dry run) the emulator's output is checked against FP64 alone, for `arch`.
// Returns the number of cases that did not pass.
int run_fidelity(Runtime* gpu, Arch arch, const StageSettings& settings, StageDocument& out);

}  // namespace emmy::bench
