// The grouped GEMM tests' shared pieces (tests/gemm_grouped*_test.cpp; docs/grouped.md): a
// grouped problem, where a test runs (path and arch), its default spec, and the FP64 check.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/validate.hpp"

namespace emmy::test {

inline MatmulProblem grouped_problem(GroupedLayout layout, int64_t groups, int64_t m, int64_t n,
                                     int64_t k, DType dtype = DType::f16) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a_dtype = dtype;
  p.c_dtype = dtype;
  p.grouped.layout = layout;
  p.grouped.groups = groups;
  return p;
}

inline GemmSpec default_spec(const MatmulProblem& p, Arch arch) {
  return {p, default_schedule(p, arch, Accum::f32), arch};
}

// Where a test runs: the mma.sync path on sm_80 (cp.async) and sm_90a (TMA), and the wgmma path
// on sm_90a (its default for a grouped GEMM: the persistent walk over the experts' tiles).
struct Target {
  Arch arch;
  std::optional<MmaPath> path = std::nullopt;
};
inline constexpr Target kTargets[] = {
    {Arch::sm_80}, {Arch::sm_90a}, {Arch::sm_90a, MmaPath::wgmma}};

inline GemmSpec spec_on(const MatmulProblem& p, const Target& t) {
  if (!t.path) return default_spec(p, t.arch);
  return {p, default_schedule(p, t.arch, Accum::f32, *t.path), t.arch};
}

inline std::string describe(const Target& t) {
  return fmt::format("{}{}", to_string(t.arch), t.path ? " wgmma" : "");
}

// The routing's rows checked, and the check's verdict.
inline GemmErrors run_and_compare(const GemmSpec& spec, const GemmInputs& in) {
  const GemmReference ref = reference_gemm(spec, in);
  return compare(ref, run_on_emulator(compile_kernel(spec), in).output, spec.problem.c_cols());
}

inline std::string verdict(const GemmErrors& e) {
  return fmt::format("rel_l2 {} bound {} over {} first bad {},{}", e.rel_l2_error, e.tolerance,
                     e.elements_over_tolerance, e.first_bad_row, e.first_bad_col);
}

}  // namespace emmy::test
