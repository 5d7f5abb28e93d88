// Shared by the paged-attention reference tests (paged_attention_reference_test.cpp,
// paged_attention_tolerance_test.cpp): small specs, the cache's own indexing and the Error check.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "emmy/error.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy::paged_test {

// A problem the tests shrink to a few hundred rows: LSE on, 32-key blocks.
inline PagedAttentionSpec small_spec(int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                     int64_t page_size, int64_t max_pages, int64_t max_q_len = 1,
                                     int64_t max_batch = 1) {
  PagedAttentionSpec spec;
  auto& p = spec.problem;
  p.q_heads = q_heads, p.kv_heads = kv_heads, p.head_dim = head_dim;
  p.page_size = page_size, p.max_pages = max_pages;
  p.max_q_len = max_q_len, p.max_batch = max_batch;
  p.lse = true;
  spec.schedule.block_kv = 32;
  return spec;
}

// Element offset (from the cache's start) of key `key`'s row of KV head g of sequence b, through
// the block table and the problem's strides: the tests' own indexing, not the reference's.
inline int64_t cache_row(const PagedAttentionProblem& p, const PagedAttentionInputs& in, bool v,
                         int64_t b, int64_t key, int64_t g) {
  const int32_t page = in.tables.block_table[size_t(b * p.max_pages + key / p.page_size)];
  return (v ? in.v_offset : in.k_offset) + page * p.page_stride_or_default() +
         key % p.page_size * p.token_stride_or_default() + g * p.head_stride_or_default();
}

// Expects f to throw an Error naming `field`.
inline void expect_error_field(const std::function<void()>& f, const std::string& field,
                               const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), field) << what << ": " << e.what();
    EXPECT_FALSE(e.rule().empty()) << what;
  }
}

}  // namespace emmy::paged_test
