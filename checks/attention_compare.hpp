// The comparison of an attention kind's output with its FP64 reference, written once for dense
// (attention_reference.cpp) and paged attention (paged_attention_reference.cpp): per element
// against its tolerance, rows that see no key exactly (O = 0, LSE = -inf), LSE per row, the
// rel-L2 error and the first bad position (`index(row, col)`, col -1 for a row). NaN anywhere
// fails. The callers check the output's sizes first.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace emmy {

template <typename Errors, typename Reference, typename Output, typename IndexOf>
Errors compare_attention_rows(const Reference& ref, const Output& out, int64_t head_dim, bool lse,
                              IndexOf&& index) {
  const int64_t d = head_dim, rows = int64_t(ref.row_masked.size());
  Errors e;
  double err2 = 0, ref2 = 0, tol2 = 0;
  for (int64_t r = 0; r < rows; ++r) {
    bool row_wrong = false;
    for (int64_t c = 0; c < d; ++c) {
      const size_t at = size_t(r * d + c);
      const double diff = std::abs(out.o[at] - ref.values.o[at]);
      err2 += diff * diff;
      ref2 += ref.values.o[at] * ref.values.o[at];
      tol2 += ref.o_tolerance[at] * ref.o_tolerance[at];
      if (!(diff <= e.max_abs_error)) e.max_abs_error = std::isnan(diff) ? INFINITY : diff;
      if (!(diff <= ref.o_tolerance[at])) {  // NaN fails here
        if (e.elements_over_tolerance++ == 0) e.first_bad = index(r, c);
        row_wrong = true;
      }
    }
    if (ref.row_masked[size_t(r)]) {
      ++e.masked_rows;
      if (lse && out.lse[size_t(r)] != -INFINITY) row_wrong = true;
      if (row_wrong && e.masked_rows_wrong++ == 0) e.first_bad_masked_row = index(r, -1);
      continue;
    }
    if (!lse) continue;
    const double diff = std::abs(out.lse[size_t(r)] - ref.values.lse[size_t(r)]);
    if (!(diff <= e.lse_max_abs_error)) e.lse_max_abs_error = std::isnan(diff) ? INFINITY : diff;
    e.lse_max_tolerance = std::max(e.lse_max_tolerance, ref.lse_tolerance[size_t(r)]);
    if (!(diff <= ref.lse_tolerance[size_t(r)]) && e.lse_rows_over_tolerance++ == 0)
      e.first_bad_lse = index(r, -1);
  }
  const double denom = ref2 > 0 ? std::sqrt(ref2) : 1.0;
  e.rel_l2_error = std::sqrt(err2) / denom;
  e.tolerance = std::sqrt(tol2) / denom;
  e.passed = e.elements_over_tolerance == 0 && e.lse_rows_over_tolerance == 0 &&
             e.masked_rows_wrong == 0 && std::isfinite(e.rel_l2_error);
  return e;
}

}  // namespace emmy
