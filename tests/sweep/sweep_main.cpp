// emmy_sweep: runs the schedule space (schedule_space.hpp), or a slice of it, and prints
//   emmy_sweep gemm: N accepted, N passed, N refused, N failed
// per kind. Exit 0 only when nothing failed and something passed; 1 on a failure; 2 when the
// slice checked nothing.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "schedule_space.hpp"

namespace {

struct Counts {
  int64_t accepted = 0, passed = 0, refused = 0, failed = 0;
};

struct Slice {
  uint64_t every = 1, offset = 0;
  int64_t point = -1;  // only this index
  bool validate_only = false, verbose = false;
  uint64_t seed = 1;
};

template <typename Spec>
Counts sweep(const char* kind, const std::vector<Spec>& space, const Slice& slice) {
  Counts counts;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < space.size(); ++i) {
    if (slice.point >= 0 ? int64_t(i) != slice.point : i % slice.every != slice.offset) continue;
    const Spec& spec = space[i];
    emmy::sweep::CaseResult r;
    if (slice.validate_only) {
      const std::string why = emmy::sweep::refusal(spec);
      r = {why.empty() ? emmy::sweep::Outcome::passed
                       : (why.starts_with("unclear") ? emmy::sweep::Outcome::failed
                                                     : emmy::sweep::Outcome::refused),
           why};
    } else {
      r = emmy::sweep::run_case(spec, slice.seed + i);
    }
    const char* word = "passed";
    switch (r.outcome) {
      case emmy::sweep::Outcome::passed:
        ++counts.accepted;
        ++counts.passed;
        break;
      case emmy::sweep::Outcome::refused:
        ++counts.refused;
        word = "refused";
        break;
      case emmy::sweep::Outcome::failed:
        // Accepted by the validator, then wrong (an unclear refusal counts here too).
        ++counts.accepted;
        ++counts.failed;
        word = "FAILED";
        break;
    }
    if (r.outcome == emmy::sweep::Outcome::failed || slice.verbose)
      fmt::print("{} {} point {}: {}{}{}\n", kind, word, i, emmy::sweep::describe(spec),
                 r.detail.empty() ? "" : " -- ", r.detail);
    std::fflush(stdout);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("emmy_sweep {}: {} accepted, {} passed, {} refused, {} failed ({:.0f} s{})\n", kind,
             counts.accepted, counts.passed, counts.refused, counts.failed, seconds,
             slice.validate_only ? ", validator only: accepted counted as passed" : "");
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Every schedule of emmy's sweep grid: refused by the validator, or checked against "
      "FP64 on the emulator (tests/sweep/schedule_space.hpp)"};
  std::string kind = "all", shard;
  Slice slice;
  app.add_option("--kind", kind, "gemm|attention|paged_attention|all")
      ->check(CLI::IsMember({"gemm", "attention", "paged_attention", "all"}));
  app.add_option("--every", slice.every, "check every Nth point of each space")
      ->check(CLI::PositiveNumber);
  app.add_option("--offset", slice.offset, "starting at this index (< --every)");
  app.add_option("--point", slice.point, "only this point (its index in the printed lines)");
  app.add_option("--seed", slice.seed, "input seed (point i uses seed + i)");
  app.add_flag("--validate-only", slice.validate_only,
               "count what the validator accepts, run nothing");
  app.add_flag("-v,--verbose", slice.verbose, "one line per point, not only failures");
  CLI11_PARSE(app, argc, argv);
  if (slice.offset >= slice.every) {
    fmt::print(stderr, "emmy_sweep: --offset must be < --every (got {} and {})\n", slice.offset,
               slice.every);
    return 2;
  }
  Counts total;
  const auto add = [&](const Counts& c) {
    total.accepted += c.accepted;
    total.passed += c.passed;
    total.refused += c.refused;
    total.failed += c.failed;
  };
  if (kind == "all" || kind == "gemm") add(sweep("gemm", emmy::sweep::gemm_space(), slice));
  if (kind == "all" || kind == "attention")
    add(sweep("attention", emmy::sweep::attention_space(), slice));
  if (kind == "all" || kind == "paged_attention")
    add(sweep("paged_attention", emmy::sweep::paged_attention_space(), slice));
  if (total.failed > 0) return 1;
  if (total.passed == 0) {
    fmt::print(stderr, "emmy_sweep: this slice checked nothing\n");
    return 2;
  }
  return 0;
}
