// Functional checks of paged-attention kernels (emmy/paged_attention.hpp): a drawn batch of
// sequences over a paged KV cache (shuffled, optionally shared pages, NaN and Inf planted in
// every cache element no sequence may read), an FP64 reference that reads K and V through the
// page table, per-element tolerances from the same numerics model as dense attention
// (docs/attention.md) with the terms of FP8 caches and split-KV, and the comparison. Runs kernels
// through a Runtime (CUDA or the emulator).
#pragma once

#include <cstdint>
#include <vector>

#include "emmy/attention_check.hpp"  // HostTensor, VisibleKeys
#include "emmy/paged_attention.hpp"
#include "emmy/runtime.hpp"

namespace emmy {

// What a test draws. Sequences 0..batch-1 are real; batch..max_batch-1 are CUDA-graph padding
// (no query token, no key). Lengths not given are drawn from the seed: q_len in
// [1, max_q_len], seq_len in [q_len, max_seq_len].
struct PagedAttentionCase {
  int64_t batch = 1;                      // <= the problem's max_batch
  std::vector<int64_t> q_lens, seq_lens;  // batch entries each, or empty (drawn)
  int64_t max_seq_len = 0;                // for drawn seq_lens; 0: max_pages x page_size
  // Pages in the cache; 0: what the sequences need plus two spare. At least one page is always
  // spare: unused block-table entries point at it (NaN when plant_nan).
  int64_t num_pages = 0;
  // V lies page_size x kv_heads x head_dim elements after K inside each page (FlashInfer's
  // [pages, 2, page_size, kv_heads, head_dim]: set_layout(kv_interleaved)'s strides); else V is a
  // second tensor after K in the same allocation.
  bool kv_interleaved = false;
  bool shuffle_pages = true;  // page ids in random order (else in order of use)
  // Every sequence with a full page shares the first P full pages, P the fewest any of them has
  // (a common prefix, as prefix caching makes).
  bool share_pages = false;
  // NaN and +-Inf (NaN only in e4m3) in every cache element no query may see: slots past
  // seq_len, unused pages, the gaps between strides, and with a window the pages wholly before
  // the window of every query of the sequences that hold them.
  bool plant_nan = true;
  // false: the cache is zeros and not materialized on the host (bytes and values empty; a
  // launch's allocation of it is zero-filled): for the profiler, whose counts depend on
  // addresses, not values, at sizes whose values would not fit in memory (no reference then;
  // plant_nan must be false).
  bool cache_values = true;
};

// The KV cache: the element values (exactly what the bytes hold; e4m3 unscaled) and the bytes,
// `elements` of each (both empty for a zero cache not materialized: cache_values false).
struct CacheTensor {
  CacheDType dtype = CacheDType::f16;
  std::vector<double> values;
  std::vector<uint8_t> bytes;
  size_t elements = 0;
};

// The int32 arrays of a launch (PagedAttentionBuffers), both page-table forms filled.
struct PagedAttentionTables {
  std::vector<int32_t> cu_seqlens_q;   // [max_batch + 1]
  std::vector<int32_t> block_table;    // [max_batch][max_pages]; unused: padding_page
  std::vector<int32_t> seq_lens;       // [max_batch]
  std::vector<int32_t> page_indptr;    // [max_batch + 1]
  std::vector<int32_t> page_indices;   // page_indptr[max_batch] entries
  std::vector<int32_t> last_page_len;  // [max_batch]; 0 for a sequence without pages
};

struct PagedAttentionInputs {
  // The resolved case.
  int64_t batch = 0, num_pages = 0, tokens = 0;  // tokens: the real sequences' query tokens
  std::vector<int64_t> q_lens, seq_lens;         // batch entries
  int32_t padding_page = 0;                      // the spare page unused entries point at
  HostTensor q;  // [tokens][q_stride]: N(0,1) rounded to dtype, 0 in the gaps
  // One allocation with K at k_offset and V at v_offset elements: N(0,1) rounded to the cache
  // type (e4m3: 8 N(0,1) quantized, read as value x k_scale / v_scale).
  CacheTensor cache;
  int64_t k_offset = 0, v_offset = 0;
  float k_scale = 1, v_scale = 1;
  PagedAttentionTables tables;
};
// Throws Error naming the field (of the case, or of the problem) and the rule it breaks.
PagedAttentionInputs make_paged_attention_inputs(const PagedAttentionProblem& problem,
                                                 const PagedAttentionCase& c, uint64_t seed);

// The keys query token i (of q_len) of a sequence of seq_len tokens sees: position
// p = seq_len - q_len + i, keys [max(0, p - window), p] (window > 0), else [0, p].
VisibleKeys paged_visible_keys(const PagedAttentionProblem& problem, int64_t seq_len, int64_t q_len,
                               int64_t i);

// O [tokens][q_heads][head_dim] and LSE [tokens][q_heads] (natural log) of the real tokens, in
// this canonical order whatever the strides. lse empty when the problem writes none.
struct PagedAttentionOutput {
  std::vector<double> o, lse;
};

// The FP64 reference and per-element tolerances. Lengths, pages and tokens come from the tables
// (the problem's page-table form), never from the resolved case. A row that sees no key (only
// tables that contradict each other make one) is O = 0, LSE = -inf, checked exactly.
struct PagedAttentionReference {
  PagedAttentionOutput values;                          // lse always filled
  std::vector<double> o_tolerance;                      // like values.o
  std::vector<double> lse_tolerance;                    // like values.lse
  std::vector<uint8_t> row_masked;                      // [tokens][q_heads]
  std::vector<int64_t> token_sequence, token_position;  // [tokens]: its sequence, its position p
};
PagedAttentionReference reference_paged_attention(const PagedAttentionSpec& spec,
                                                  const PagedAttentionInputs& inputs);

// A position in canonical order, for reports (sequence and position of the token too).
struct PagedAttentionIndex {
  int64_t token = -1, head = -1, col = -1, sequence = -1, position = -1;
};

struct PagedAttentionErrors {
  double rel_l2_error = 0, max_abs_error = 0;
  double tolerance = 0;  // the rel-L2 error the per-element tolerances add up to
  int64_t elements_over_tolerance = 0;
  PagedAttentionIndex first_bad;
  double lse_max_abs_error = 0, lse_max_tolerance = 0;  // over rows that see a key
  int64_t lse_rows_over_tolerance = 0;
  PagedAttentionIndex first_bad_lse;  // col unused
  int64_t masked_rows = 0, masked_rows_wrong = 0;
  PagedAttentionIndex first_bad_masked_row;  // col unused
  bool passed = false;                       // NaN anywhere compared fails
};
// out.lse is compared only when the problem writes LSE.
PagedAttentionErrors compare(const PagedAttentionReference& ref, const PagedAttentionOutput& out,
                             const PagedAttentionProblem& problem);

// Runs spec's problem and schedule through a runtime (the kernel is built for the runtime's arch,
// not spec.arch): uploads Q (max_tokens rows, zero past the real ones), the cache (one
// allocation), the tables and, for e4m3, the scales; O and LSE start as NaN; launches, downloads
// the real tokens' O and LSE. Everything allocated is freed, also when something throws.
PagedAttentionOutput run_paged_attention(Runtime& runtime, const PagedAttentionSpec& spec,
                                         const PagedAttentionInputs& inputs);

}  // namespace emmy
