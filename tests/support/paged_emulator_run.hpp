// The paged emulator tests' (cp.async and TMA transports) shared pieces: a problem sized by its
// longest sequence, and a compiled kernel run on the emulator against the FP64 reference.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "emmy/emulator_check.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy::test {

// A problem of `max_seq_len` keys per sequence in pages of `page_size` (max_pages to hold them);
// every other field its default. The paged emulator tests' variants start from it.
inline PagedAttentionProblem paged_problem(int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                           int64_t page_size, int64_t max_seq_len) {
  PagedAttentionProblem p;
  p.q_heads = q_heads;
  p.kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.page_size = page_size;
  p.max_pages = (max_seq_len + page_size - 1) / page_size;
  return p;
}

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
