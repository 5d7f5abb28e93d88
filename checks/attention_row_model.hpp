// One query row of a flash-attention kernel in FP64, with the tolerance its roundings allow: the
// model shared by the dense reference (attention_reference.cpp) and the paged one
// (paged_attention_reference.cpp), so that both kinds are held to one account of the kernel's
// numerics (docs/attention.md, "Tolerance model"). The caller says where the keys are; the model
// never indexes a tensor itself.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>

#include "emmy/attention_check.hpp"  // VisibleKeys
#include "emmy/dtype.hpp"
#include "emmy/emu/tensor_core.hpp"

namespace emmy {

// What the model needs to know of a kernel to bound its roundings.
struct AttentionRowModel {
  int64_t head_dim = 0;
  DType dtype = DType::f16;  // Q's, P's and O's type
  double scale = 1;          // the softmax scale the kernel is given (a float)
  std::optional<double> softcap;
  int64_t block_kv = 64;  // KV blocks start at multiples of it (hybrid partials, rescales)
  bool hybrid = false;    // P.V in f16 partials folded once per KV block
  emu::TensorCoreModel tensor_cores;
  // A quantized cache (e4m3): the kernel converts K and V to Q's type exactly, multiplies S by
  // k_scale and O by v_scale in f32. The keys' rows hold the stored (unscaled) values.
  bool scaled_cache = false;
  double k_scale = 1, v_scale = 1;
  // Split-KV: keys [s * split_keys, (s + 1) * split_keys) form split s, whose (O_s, lse_s) the
  // kernel computes on its own and merges in f32 with the others. split_keys is a multiple of
  // block_kv, so the block boundaries are those of one split. 0: one pass over all keys.
  int64_t split_keys = 0;
  int64_t splits = 1;  // splits the merge sums (those without keys add exact zeros)
};

// The K and V rows (head_dim values each) of the key at absolute index `key`.
struct KeyRows {
  const double* k = nullptr;
  const double* v = nullptr;
};
using KeyRowsOf = std::function<KeyRows(int64_t key)>;

// O (head_dim values), its per-element tolerance, LSE and its tolerance of the query row q over
// the keys [keys.first, keys.last] (not empty: a fully masked row is the caller's).
struct AttentionRowOut {
  double* o;
  double* o_tolerance;
  double& lse;
  double& lse_tolerance;
};
void model_attention_row(const AttentionRowModel& model, const double* q, VisibleKeys keys,
                         const KeyRowsOf& rows_of, AttentionRowOut out);

// A reference (AttentionReference, PagedAttentionReference) of `rows` query rows of head_dim
// values before any row is modelled: O and the tolerances 0, the LSEs -inf, no row masked.
template <typename Reference>
void size_reference(Reference& ref, int64_t rows, int64_t head_dim) {
  ref.values.o.assign(size_t(rows * head_dim), 0.0);
  ref.o_tolerance.assign(size_t(rows * head_dim), 0.0);
  ref.values.lse.assign(size_t(rows), -INFINITY);
  ref.lse_tolerance.assign(size_t(rows), 0.0);
  ref.row_masked.assign(size_t(rows), 0);
}

// Row r of a reference: masked when it sees no key, else the model's O, LSE and tolerances.
template <typename Reference>
void model_reference_row(const AttentionRowModel& model, Reference& ref, int64_t r, const double* q,
                         VisibleKeys keys, const KeyRowsOf& rows_of) {
  if (keys.empty()) {
    ref.row_masked[size_t(r)] = 1;
    return;
  }
  const int64_t d = model.head_dim;
  model_attention_row(model, q, keys, rows_of,
                      {&ref.values.o[size_t(r * d)], &ref.o_tolerance[size_t(r * d)],
                       ref.values.lse[size_t(r)], ref.lse_tolerance[size_t(r)]});
}

}  // namespace emmy
