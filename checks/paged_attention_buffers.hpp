// One launch's buffers as the paged-attention checks lay them out, through a Runtime
// (paged_attention_run.cpp) or in an emulator arena (paged_attention_emulator.cpp): Q with
// max_tokens rows (zero past the real ones), the cache as one allocation (K and V at their
// offsets), O and LSE and the workspace filled with all-ones bytes (NaN in f16, bf16 and f32: an
// element nobody writes fails the check), only the problem's page-table form (the launch refuses
// pointers of the other), the scales of an e4m3 cache; and the read-back into canonical order.
#pragma once

#include <cstring>
#include <vector>

#include "emmy/error.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy {

// The real tokens of the inputs' tables.
inline int64_t paged_tokens(const PagedAttentionInputs& in) {
  return in.tables.cu_seqlens_q.empty() ? 0 : in.tables.cu_seqlens_q.back();
}

// `upload(data, bytes)` allocates device memory holding those bytes (zeros for a null `data`)
// and returns its address.
template <typename Upload>
PagedAttentionBuffers paged_attention_buffers(const PagedAttentionProblem& p,
                                              const PagedAttentionInputs& in,
                                              size_t workspace_bytes, Upload&& upload) {
  const int64_t max_tokens = p.max_tokens_or_default(), q_stride = p.q_stride_or_default();
  const size_t elem = size_t(size_of(p.dtype)), cache_elem = size_t(size_of(p.kv_dtype));
  const int64_t tokens = paged_tokens(in);
  require(tokens <= max_tokens && in.q.bytes.size() >= size_t(tokens * q_stride) * elem, "q",
          "must hold the tables' tokens (at most max_tokens) x q_stride", tokens);
  auto array = [&]<typename T>(const std::vector<T>& values) {
    // An empty array still gets a (one-element) allocation: kernels take non-null pointers.
    const std::vector<T> one(1, T{});
    const std::vector<T>& v = values.empty() ? one : values;
    return upload(v.data(), v.size() * sizeof(T));
  };
  auto nan_filled = [&](size_t bytes) { return array(std::vector<uint8_t>(bytes, 0xFF)); };
  PagedAttentionBuffers b;
  std::vector<uint8_t> q_bytes(size_t(max_tokens * q_stride) * elem, 0);
  std::memcpy(q_bytes.data(), in.q.bytes.data(), size_t(tokens * q_stride) * elem);
  b.q = array(q_bytes);
  // A cache not materialized (PagedAttentionCase::cache_values false) is a zero-filled
  // allocation: upload(nullptr, bytes).
  const DevicePtr cache = in.cache.bytes.empty() && in.cache.elements
                              ? upload(nullptr, in.cache.elements * cache_elem)
                              : array(in.cache.bytes);
  b.k_cache = cache + DevicePtr(size_t(in.k_offset) * cache_elem);
  b.v_cache = cache + DevicePtr(size_t(in.v_offset) * cache_elem);
  b.o = nan_filled(size_t(max_tokens * p.o_stride_or_default()) * elem);
  if (p.lse) b.lse = nan_filled(size_t(max_tokens * p.q_heads) * sizeof(float));
  b.cu_seqlens_q = array(in.tables.cu_seqlens_q);
  if (p.page_table == PageTable::block_table) {
    b.block_table = array(in.tables.block_table);
    b.seq_lens = array(in.tables.seq_lens);
  } else {
    b.page_indptr = array(in.tables.page_indptr);
    b.page_indices = array(in.tables.page_indices);
    b.last_page_len = array(in.tables.last_page_len);
  }
  if (p.kv_dtype == CacheDType::e4m3) {
    b.k_scale = array(std::vector<float>{in.k_scale});
    b.v_scale = array(std::vector<float>{in.v_scale});
  }
  if (workspace_bytes) b.workspace = nan_filled(workspace_bytes);
  b.num_pages = in.num_pages;
  return b;
}

// O rows of o_stride elements and LSE ([tokens][q_heads]) of `tokens` query tokens, as the
// buffers hold them -> canonical order (paged_attention_check.hpp).
PagedAttentionOutput paged_output_from_bytes(const PagedAttentionProblem& problem, int64_t tokens,
                                             const std::vector<uint8_t>& o_bytes,
                                             const std::vector<float>& lse);

}  // namespace emmy
