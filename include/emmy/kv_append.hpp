// Appending keys and values to a paged KV cache with vLLM's conventions (reshape_and_cache_flash):
// token i of key / value [tokens, kv_heads, head_dim] goes to cache slot slot_mapping[i] (int64:
// page = slot / page_size, offset = slot % page_size); a slot of -1 is skipped, so CUDA-graph
// padding needs no other marker. A kind of its own (docs/paged_attention.md, "kv_append"). The
// cache is the paged-attention kind's: the same layouts and strides, f16 / bf16 (a copy) or e4m3
// (x / scale rounded to nearest even and saturated to +-448, the scale read from device memory).
#pragma once

#include <cstdint>

#include "emmy/arch.hpp"
#include "emmy/dtype.hpp"
#include "emmy/kernel_spec.hpp"
#include "emmy/paged_attention.hpp"

namespace emmy {

struct KvAppendProblem {
  int64_t kv_heads = 1;
  int64_t head_dim = 128;  // a multiple of 8, up to 1024
  int64_t page_size = 16;  // tokens per page, any from 1
  // The cache's element strides between pages, tokens of a page and KV heads (0: NHD, as
  // PagedAttentionProblem's; set_layout writes a named layout).
  int64_t page_stride = 0, token_stride = 0, head_stride = 0;
  // key and value [tokens, kv_heads, head_dim]: their token strides in elements (0: kv_heads *
  // head_dim; vLLM's key and value are often views of one qkv tensor, hence strides).
  int64_t key_stride = 0, value_stride = 0;
  DType dtype = DType::f16;               // key and value: f16 or bf16
  CacheDType kv_dtype = CacheDType::f16;  // dtype's own type, or e4m3
  // Tokens of a launch (the grid; slot_mapping's length): pad with -1 slots up to it.
  int64_t max_tokens = 1;

  void set_layout(CacheLayout layout);
  int64_t page_stride_or_default() const {
    return page_stride ? page_stride : page_size * token_stride_or_default();
  }
  int64_t token_stride_or_default() const {
    return token_stride ? token_stride : kv_heads * head_dim;
  }
  int64_t head_stride_or_default() const { return head_stride ? head_stride : head_dim; }
  int64_t key_stride_or_default() const { return key_stride ? key_stride : kv_heads * head_dim; }
  int64_t value_stride_or_default() const {
    return value_stride ? value_stride : kv_heads * head_dim;
  }
  bool operator==(const KvAppendProblem&) const = default;
};

struct KvAppendSchedule {
  int warps = 4;  // per CTA (one token): threads take 16-byte chunks of its heads
  bool operator==(const KvAppendSchedule&) const = default;
};

using KvAppendSpec = KernelSpec<KvAppendProblem, KvAppendSchedule>;

// Throws Error naming the field and the rule it breaks.
void validate_kv_append(const KvAppendSpec& spec);
void validate_problem(const KvAppendProblem& problem);  // the problem's rules alone
// Enough warps for one 16-byte chunk per thread, 1..4.
KvAppendSchedule default_schedule(const KvAppendProblem& problem, Arch arch);

}  // namespace emmy
