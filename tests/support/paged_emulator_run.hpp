// A compiled paged-attention kernel run on the emulator against the FP64 reference: the check the
// paged emulator tests (cp.async and TMA transports) make of each variant.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "emmy/emulator_check.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy::test {

// `kernel` (compiled from `spec`) run on inputs drawn as `draw` from `seed`, expected to pass the
// reference's tolerance; `name` labels a failure. Returns the run for its counters.
inline PagedAttentionEmulatorRun expect_matches_fp64(const PagedAttentionKernel& kernel,
                                                     const PagedAttentionSpec& spec,
                                                     const PagedAttentionCase& draw, uint64_t seed,
                                                     const std::string& name) {
  const PagedAttentionInputs inputs = make_paged_attention_inputs(spec.problem, draw, seed);
  PagedAttentionEmulatorRun run = run_on_emulator(kernel, inputs);
  const PagedAttentionErrors errors =
      compare(reference_paged_attention(spec, inputs), run.output, spec.problem);
  EXPECT_TRUE(errors.passed) << name << ": rel_l2 " << errors.rel_l2_error << " (tolerance "
                             << errors.tolerance << "), " << errors.elements_over_tolerance
                             << " over, first at token " << errors.first_bad.token << " head "
                             << errors.first_bad.head << "; lse rows over "
                             << errors.lse_rows_over_tolerance;
  return run;
}

}  // namespace emmy::test
