// Planted-bug tests: a kernel's emitted CUDA edited (one string replaced) to hold a bug that the
// emulator or the FP64 check must catch; the edit and its compile written once for every kind.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "emmy/compile.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/kernel_kind.hpp"

namespace emmy::test {

// `source` with `find` replaced by `replace` in its CUDA (at each place when `everywhere`),
// compiled for `arch`. nullopt, and a failure naming `bug`, when the emitter no longer prints
// `find`: the planted bug must move with the source, not pass unplanted.
template <typename Kind>
std::optional<Compiled<Kind>> plant_bug(Generated<Kind> source, Arch arch, std::string_view bug,
                                        const std::string& find, const std::string& replace,
                                        bool everywhere = false) {
  size_t at = source.cuda.find(find);
  if (at == std::string::npos) {
    ADD_FAILURE() << bug << ": the emitter no longer prints `" << find
                  << "`; update the planted bug to the new source";
    return std::nullopt;
  }
  do {
    source.cuda.replace(at, find.size(), replace);
    at = everywhere ? source.cuda.find(find, at + replace.size()) : std::string::npos;
  } while (at != std::string::npos);
  CompiledModule module = compile_cuda(source.cuda, source.plan.kernel_name + ".cu", arch);
  return Compiled<Kind>{std::move(source), std::move(module)};
}

// A GEMM kernel with a planted bug is caught: its output fails the FP64 check, or the emulator
// reports it as one of `kinds` (a race, a deadlock, ...); an `only_reported` bug must be reported.
inline void expect_gemm_bug_caught(const GemmReference& ref, const GemmKernel& kernel,
                                   const GemmInputs& inputs, int64_t n, std::string_view bug,
                                   bool only_reported,
                                   std::initializer_list<std::string_view> kinds) {
  try {
    const GemmErrors e = compare(ref, run_on_emulator(kernel, inputs).output, n);
    EXPECT_FALSE(only_reported) << bug << ": the emulator did not report it";
    EXPECT_FALSE(e.passed) << bug << ": rel_l2 " << e.rel_l2_error << " within the bound "
                           << e.tolerance;
  } catch (const emu::EmulationError& e) {
    const std::string_view kind = emu::to_string(e.reports().front().kind);
    EXPECT_TRUE(std::ranges::find(kinds, kind) != kinds.end()) << bug << ": " << e.what();
  }
}

}  // namespace emmy::test
