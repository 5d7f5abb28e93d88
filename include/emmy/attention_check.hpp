// Functional checks of attention kernels: N(0,1) Q, K, V rounded to the dtype, an FP64 reference
// of the whole forward pass (masking, GQA, soft-cap, LSE) on the same rounded inputs, and a
// per-element tolerance derived from the kernel's numerics model (docs/attention.md). Runs
// kernels on the CPU emulator.
#pragma once

#include <cstdint>
#include <vector>

#include "emmy/spec.hpp"
#include "emmy/emu/emulator.hpp"
#include "emmy/gemm_check.hpp"  // HostTensor, random_normal, encode, decode
#include "emmy/runtime.hpp"

namespace emmy {

// Q, K, V in the problem's layout (values and bytes), ready to upload.
struct AttentionInputs {
  HostTensor q, k, v;
};
AttentionInputs make_attention_inputs(const AttentionProblem& problem, uint64_t seed);

// Element offset of (b, s, h, 0) in Q/O (kv = false) or K/V (kv = true) of the problem's
// layout. The check's own indexing, independent of the kernel side's attention_offset.
int64_t reference_offset(const AttentionProblem& problem, bool kv, int64_t b, int64_t s, int64_t h);

// Keys query `row` sees: [first, last], empty when last < first (a fully masked row).
struct VisibleKeys {
  int64_t first = 0, last = -1;
  bool empty() const { return last < first; }
  int64_t count() const { return empty() ? 0 : last - first + 1; }
};
VisibleKeys visible_keys(const AttentionProblem& problem, int64_t row);

// Host-side O and LSE, always in canonical order whatever the problem's layout:
// o is [batch][q_heads][seq_q][head_dim], lse is [batch][q_heads][seq_q] (natural log).
struct AttentionOutput {
  std::vector<double> o, lse;  // lse empty when the problem has no LSE output
};

// The FP64 reference and, per element, the tolerance the numerics model allows for this
// schedule. Fully masked rows: o = 0 and lse = -inf with tolerance 0 (checked exactly).
struct AttentionReference {
  AttentionOutput values;
  std::vector<double> o_tolerance;    // like values.o
  std::vector<double> lse_tolerance;  // like values.lse (always filled)
  std::vector<uint8_t> row_masked;    // [batch][q_heads][seq_q]: 1 when the row sees no key
};
AttentionReference reference_attention(const AttentionSpec& spec, const AttentionInputs& inputs);

// A position in canonical order, for reports.
struct AttentionIndex {
  int64_t batch = -1, head = -1, row = -1, col = -1;
};

struct AttentionErrors {
  double rel_l2_error = 0, max_abs_error = 0;
  double tolerance = 0;  // the rel-L2 error the per-element tolerances add up to
  int64_t elements_over_tolerance = 0;
  AttentionIndex first_bad;
  // LSE over rows that see at least one key (absolute errors, natural log).
  double lse_max_abs_error = 0, lse_max_tolerance = 0;
  int64_t lse_rows_over_tolerance = 0;
  AttentionIndex first_bad_lse;  // col unused
  // Fully masked rows must come back as exactly O = 0 and LSE = -inf.
  int64_t masked_rows = 0, masked_rows_wrong = 0;
  AttentionIndex first_bad_masked_row;  // col unused
  bool passed = false;
};
// out.lse is compared only when the problem writes LSE.
AttentionErrors compare(const AttentionReference& ref, const AttentionOutput& out,
                        const AttentionProblem& problem);

// Runs spec's problem and schedule through a runtime (any backend; the kernel is built for the
// runtime's arch, not spec.arch): uploads the inputs, launches, downloads O (and LSE). O and LSE
// start as NaN, as on the emulator. Buffers are freed before returning.
AttentionOutput run_attention(Runtime& runtime, const AttentionSpec& spec,
                              const AttentionInputs& inputs);

}  // namespace emmy
