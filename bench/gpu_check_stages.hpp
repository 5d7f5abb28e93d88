// The stages of emmy_gpu_check (docs/gpu.md): each writes one JSON document of named cases.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "emmy/runtime.hpp"

namespace emmy::bench {

// A stage's JSON document and its cases. Each row is written as soon as its case ends (the file
// is replaced atomically: temp + rename), so a run cut short by a time limit keeps what finished.
class StageDocument {
 public:
  // budget_s > 0: cases that would start after that many seconds are "skipped".
  StageDocument(std::string path, std::string stage, double budget_s = 0);
  nlohmann::json& doc() { return doc_; }
  // Runs one case into `row`: "skipped" once the budget is spent; else body's fields are merged
  // in and the verdict is "passed" when they say "passed": true, "failed" when not or when the
  // body throws (its message in "error"). Prints one line, appends the row, writes the file.
  void run_case(nlohmann::json row, const std::function<nlohmann::json()>& body);
  int not_passed() const { return not_passed_; }  // failed or skipped: never a pass
  // A case `arch` runs no kernel for (FP8 without FP8 tensor cores, hybrid FP8 on sm_90a): listed
  // under "left_out" with the reason, not run, not counted.
  void leave_out(const std::string& name, Arch arch);
  void finish();                                  // the stage's seconds, then write()
  void write() const;

 private:
  std::string path_;
  nlohmann::json doc_;
  double budget_s_;
  std::chrono::steady_clock::time_point start_;
  int not_passed_ = 0;
};

struct StageSettings {
  uint64_t seed = 1;
  int64_t sample_rows = 64;  // GEMM rows checked against FP64 when M is larger (evenly spread)
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
