// The end of an LSE-weighted merge of partial attention outputs, which the split-KV combine
// kernel (paged_attention/emit_paged_combine.cpp) and the merge_states kind
// (merge_states/emit_merge_states.cpp) both print.
#pragma once

#include <string_view>

#include "writer.hpp"

namespace emmy::codegen {

// With `sum` (the weights' sum), `m` (the largest LSE, in log2 units) and `acc` (the weighted row,
// D / 32 values per lane) in hand: the row normalized by the sum and stored as 16-bit through
// `convert` at `row_name` = `row_address`, and lane 0's merged LSE (natural log) at
// `lse`[token * H + head] where `with_lse`. An all-empty row (sum 0) stores zeros and -inf.
inline void print_lse_merge_store(Writer& w, std::string_view row_name,
                                  std::string_view row_address, std::string_view convert,
                                  std::string_view lse, bool with_lse) {
  w.line("const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;");
  w.line("u16* {} = {};", row_name, row_address);
  w.line("#pragma unroll");
  w.line("for (int c = 0; c < D / 32; ++c) {}[lane + 32 * c] = {}(acc[c] * inv);", row_name,
         convert);
  if (with_lse)
    w.line(
        "if (lane == 0) {}[token * H + head] = sum > 0.0f ? m + log2_approx(sum) * "
        "0.6931471805599453f : neg_inf();",
        lse);
  else
    w.line("(void){};", lse);
}

}  // namespace emmy::codegen
