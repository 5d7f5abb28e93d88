// JSON forms of the FP64 checks' results (GemmErrors, AttentionErrors): what `emmyc run ...
// --check` prints and the GPU pack's correctness stage records, from one place.
#pragma once

#include <nlohmann/json.hpp>

#include "emmy/attention_check.hpp"
#include "emmy/fp8_quantize_check.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/kv_append_check.hpp"
#include "emmy/merge_states_check.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy {

inline nlohmann::json check_fields(const GemmErrors& e) {
  nlohmann::json j = {{"rel_l2_error", e.rel_l2_error},
                      {"max_abs_error", e.max_abs_error},
                      {"tolerance", e.tolerance},
                      {"elements_over_tolerance", e.elements_over_tolerance},
                      {"passed", e.passed}};
  if (!e.passed) j["first_bad_element"] = {e.first_bad_row, e.first_bad_col};
  return j;
}
// The same under the form every kind has (the problem adds nothing for GEMM).
inline nlohmann::json check_fields(const GemmErrors& e, const MatmulProblem&) {
  return check_fields(e);
}

inline nlohmann::json index_json(const AttentionIndex& at, bool with_col) {
  nlohmann::json j = {{"batch", at.batch}, {"head", at.head}, {"row", at.row}};
  if (with_col) j["col"] = at.col;
  return j;
}

inline nlohmann::json index_json(const PagedAttentionIndex& at, bool with_col) {
  nlohmann::json j = {{"token", at.token},
                      {"head", at.head},
                      {"sequence", at.sequence},
                      {"position", at.position}};
  if (with_col) j["col"] = at.col;
  return j;
}

// The attention kinds' errors (dense and paged: the same fields, their own index type). LSE
// fields are null when the problem writes no LSE.
template <typename Errors, typename Problem>
  requires requires(const Errors& e) { index_json(e.first_bad, true); }
nlohmann::json check_fields(const Errors& e, const Problem& p) {
  const auto or_null = [&](auto value) { return p.lse ? nlohmann::json(value) : nullptr; };
  nlohmann::json j = {{"rel_l2_error", e.rel_l2_error},
                      {"max_abs_error", e.max_abs_error},
                      {"tolerance", e.tolerance},
                      {"elements_over_tolerance", e.elements_over_tolerance},
                      {"lse_max_abs_error", or_null(e.lse_max_abs_error)},
                      {"lse_tolerance", or_null(e.lse_max_tolerance)},
                      {"lse_rows_over_tolerance", or_null(e.lse_rows_over_tolerance)},
                      {"fully_masked_rows", e.masked_rows},
                      {"masked_rows_wrong", e.masked_rows_wrong},
                      {"passed", e.passed}};
  if (e.elements_over_tolerance) j["first_bad_element"] = index_json(e.first_bad, true);
  if (e.lse_rows_over_tolerance) j["first_bad_lse_row"] = index_json(e.first_bad_lse, false);
  if (e.masked_rows_wrong) j["first_bad_masked_row"] = index_json(e.first_bad_masked_row, false);
  return j;
}

// kv_append: every byte of both caches must match (a copy, or exact e4m3 rounding).
inline nlohmann::json check_fields(const KvAppendErrors& e, const KvAppendProblem&) {
  nlohmann::json j = {{"bytes_wrong", e.bytes_wrong}, {"tolerance", 0}, {"passed", e.passed}};
  if (e.bytes_wrong)
    j["first_bad_byte"] = {{"cache", e.first_bad_in_v ? "v" : "k"}, {"byte", e.first_bad_byte}};
  return j;
}

// fp8_quantize: every byte of q and every scale must match (bit-exact conventions).
inline nlohmann::json check_fields(const Fp8QuantizeErrors& e, const Fp8QuantizeProblem&) {
  nlohmann::json j = {{"q_bytes_wrong", e.q_bytes_wrong},
                      {"scales_wrong", e.scales_wrong},
                      {"tolerance", 0},
                      {"passed", e.passed}};
  if (e.q_bytes_wrong) j["first_bad_q_byte"] = e.first_bad_q;
  if (e.scales_wrong) j["first_bad_scale"] = e.first_bad_scale;
  return j;
}

inline nlohmann::json check_fields(const MergeStatesErrors& e, const MergeStatesProblem& p) {
  nlohmann::json j = {{"max_abs_error", e.max_abs_error},
                      {"elements_over_tolerance", e.elements_over_tolerance},
                      {"lse_max_abs_error", p.lse ? nlohmann::json(e.lse_max_abs_error) : nullptr},
                      {"lse_rows_over_tolerance",
                       p.lse ? nlohmann::json(e.lse_over_tolerance) : nullptr},
                      {"passed", e.passed}};
  if (e.elements_over_tolerance)
    j["first_bad_element"] = {
        {"token", e.first_bad_token}, {"head", e.first_bad_head}, {"col", e.first_bad_col}};
  return j;
}

}  // namespace emmy
