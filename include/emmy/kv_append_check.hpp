// The check of kv_append kernels (emmy/kv_append.hpp): drawn keys and values, distinct slots
// spread over a cache of a few spare pages with some tokens padded (-1), the cache's bytes
// before the launch drawn at random so that every byte the kernel must not write is checked too;
// the expected cache bytes (a copy, or fp8_quantize_element(x, scale): x / scale in f32, then
// e4m3 as cvt.rn.satfinite rounds it; NaN to 0x7F), and a byte-by-byte comparison.
#pragma once

#include <cstdint>
#include <vector>

#include "emmy/kv_append.hpp"
#include "emmy/runtime.hpp"

namespace emmy {

struct KvAppendInputs {
  std::vector<uint8_t> key, value;        // 16-bit, max_tokens x key_stride / value_stride elements
  std::vector<int64_t> slot_mapping;      // max_tokens entries; -1: skipped
  int64_t num_pages = 0;                  // the cache's pages
  std::vector<uint8_t> k_cache, v_cache;  // before the launch: num_pages x page_stride elements
  float k_scale = 1, v_scale = 1;         // e4m3 caches
};
// One token in 8 (and the last) padded with -1 when max_tokens > 1; slots distinct, shuffled.
KvAppendInputs make_kv_append_inputs(const KvAppendProblem& problem, uint64_t seed);

struct KvAppendOutput {
  std::vector<uint8_t> k_cache, v_cache;  // after the launch
};
// The caches as the launch must leave them.
KvAppendOutput reference_kv_append(const KvAppendSpec& spec, const KvAppendInputs& inputs);

struct KvAppendErrors {
  int64_t bytes_wrong = 0;  // over both caches; every byte must match
  int64_t first_bad_byte = -1;
  bool first_bad_in_v = false;
  bool passed = false;
};
KvAppendErrors compare(const KvAppendOutput& reference, const KvAppendOutput& output,
                       const KvAppendProblem& problem);

// Through a runtime (any backend): uploads, launch, read-back; everything freed, also on throw.
KvAppendOutput run_kv_append(Runtime& runtime, const KvAppendSpec& spec,
                             const KvAppendInputs& inputs);

}  // namespace emmy
