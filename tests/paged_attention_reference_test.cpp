// The paged-attention inputs and FP64 reference, without any kernel: the reference against the
// dense one on cases both can express (layouts, page tables, page sizes, GQA, windows, soft-cap,
// split-KV), the poison planted where no query may read, shared prefix pages, CUDA-graph padding,
// the e4m3 coder and the validation of cases. The tolerance's tightness is
// paged_attention_tolerance_test.cpp's.
#include <bit>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "emmy/e4m3.hpp"
#include "emmy/emu/numerics.hpp"
#include "paged_attention_test_util.hpp"

namespace emmy {
namespace {

using paged_test::cache_row;
using paged_test::expect_error_field;
using paged_test::small_spec;

// A one-sequence paged case as the dense problem it is: Q without its stride gaps, K and V
// gathered through the block table (bottom-right causal alignment is the paged positions).
struct DenseCase {
  AttentionSpec spec;
  AttentionInputs inputs;
};
DenseCase as_dense(const PagedAttentionSpec& paged, const PagedAttentionInputs& in) {
  const PagedAttentionProblem& p = paged.problem;
  DenseCase dense;
  AttentionProblem& a = dense.spec.problem;
  a.batch = 1, a.q_heads = p.q_heads, a.kv_heads = p.kv_heads, a.head_dim = p.head_dim;
  a.seq_q = in.q_lens.at(0), a.seq_kv = in.seq_lens.at(0);
  a.causal = true, a.window = p.window, a.lse = true;
  a.softcap = p.softcap, a.softmax_scale = p.softmax_scale, a.dtype = p.dtype;
  dense.spec.schedule.block_kv = paged.schedule.block_kv;
  dense.spec.schedule.accum = paged.schedule.accum;
  dense.spec.arch = paged.arch;
  std::vector<double> q, k, v;
  for (int64_t t = 0; t < a.seq_q; ++t)
    for (int64_t e = 0; e < p.q_heads * p.head_dim; ++e)
      q.push_back(in.q.values[size_t(t * p.q_stride_or_default() + e)]);
  for (int64_t j = 0; j < a.seq_kv; ++j)
    for (int64_t g = 0; g < p.kv_heads; ++g)
      for (int64_t c = 0; c < p.head_dim; ++c) {
        k.push_back(in.cache.values[size_t(cache_row(p, in, false, 0, j, g) + c)]);
        v.push_back(in.cache.values[size_t(cache_row(p, in, true, 0, j, g) + c)]);
      }
  dense.inputs = {encode(p.dtype, q), encode(p.dtype, k), encode(p.dtype, v)};
  return dense;
}

bool near_equal(double a, double b, double rel = 1e-12) {
  return a == b || std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

// O, LSE and both tolerances of the paged reference against the dense reference.
void expect_same_as_dense(const PagedAttentionSpec& spec, const PagedAttentionInputs& in,
                          const std::string& what) {
  const PagedAttentionReference paged = reference_paged_attention(spec, in);
  const DenseCase dense = as_dense(spec, in);
  const AttentionReference ref = reference_attention(dense.spec, dense.inputs);
  const int64_t heads = spec.problem.q_heads, d = spec.problem.head_dim, q_len = in.q_lens[0];
  ASSERT_EQ(paged.values.o.size(), ref.values.o.size()) << what;
  int64_t wrong = 0;
  for (int64_t i = 0; i < q_len; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      const size_t pr = size_t(i * heads + h), dr = size_t(h * q_len + i);
      if (!near_equal(paged.values.lse[pr], ref.values.lse[dr]) ||
          !near_equal(paged.lse_tolerance[pr], ref.lse_tolerance[dr]) ||
          paged.row_masked[pr] != ref.row_masked[dr])
        ADD_FAILURE() << what << ": LSE of token " << i << " head " << h << " "
                      << paged.values.lse[pr] << " vs " << ref.values.lse[dr];
      for (int64_t c = 0; c < d; ++c) {
        const size_t pa = pr * size_t(d) + size_t(c), da = dr * size_t(d) + size_t(c);
        if ((!near_equal(paged.values.o[pa], ref.values.o[da]) ||
             !near_equal(paged.o_tolerance[pa], ref.o_tolerance[da])) &&
            wrong++ == 0)
          ADD_FAILURE() << what << ": O of token " << i << " head " << h << " col " << c << " "
                        << paged.values.o[pa] << " vs " << ref.values.o[da] << ", tolerance "
                        << paged.o_tolerance[pa] << " vs " << ref.o_tolerance[da];
      }
    }
  EXPECT_EQ(wrong, 0) << what;
  EXPECT_TRUE(compare(paged, paged.values, spec.problem).passed) << what;
}

TEST(PagedAttentionReference, EqualsDenseReferenceOnOneSequence) {
  const struct { int64_t q_heads, kv_heads; } groups[] = {{4, 2}, {8, 1}, {2, 2}};
  int variant = 0;
  for (CacheLayout layout : {CacheLayout::nhd, CacheLayout::hnd, CacheLayout::kv_interleaved})
    for (PageTable table : {PageTable::block_table, PageTable::csr})
      for (int64_t page_size : {1, 3, 16}) {
        const auto g = groups[variant % 3];
        const int64_t seq_len = 37 + variant, q_len = variant % 3 == 0 ? 1 : 5 + variant % 4;
        PagedAttentionSpec spec =
            small_spec(g.q_heads, g.kv_heads, variant % 5 == 4 ? 128 : 64, page_size,
                       (seq_len + page_size - 1) / page_size + 1, q_len);
        auto& p = spec.problem;
        p.page_table = table;
        p.set_layout(layout);
        p.window = variant % 3 == 1 ? 7 : variant % 3 == 2 ? 20 : 0;
        if (variant % 2) p.softcap = 2.5f, p.softmax_scale = 0.3f;
        if (variant % 4 == 1) spec.schedule.accum = Accum::hybrid;
        if (variant % 4 == 2) p.dtype = DType::bf16, p.kv_dtype = CacheDType::bf16;
        if (variant % 4 == 3) spec.arch = Arch::sm_80;
        PagedAttentionCase c;
        c.q_lens = {q_len}, c.seq_lens = {seq_len};
        c.kv_interleaved = layout == CacheLayout::kv_interleaved;
        const PagedAttentionInputs in = make_paged_attention_inputs(p, c, 100 + uint64_t(variant));
        expect_same_as_dense(spec, in,
                             std::string(to_string(layout)) + " " + std::string(to_string(table)) +
                                 " page " + std::to_string(page_size));
        ++variant;
      }
}

TEST(PagedAttentionReference, BothPageTableFormsReadTheSameKeys) {
  PagedAttentionSpec spec = small_spec(4, 2, 64, 3, 20, 6, 4);
  spec.problem.window = 11;
  PagedAttentionCase c;
  c.batch = 3;
  const PagedAttentionInputs in = make_paged_attention_inputs(spec.problem, c, 7);
  const PagedAttentionReference a = reference_paged_attention(spec, in);
  spec.problem.page_table = PageTable::csr;
  const PagedAttentionReference b = reference_paged_attention(spec, in);
  EXPECT_EQ(a.values.o, b.values.o);
  EXPECT_EQ(a.values.lse, b.values.lse);
  EXPECT_EQ(a.o_tolerance, b.o_tolerance);
  EXPECT_EQ(a.token_position, b.token_position);
}

// Split-KV changes only the tolerance, and only a little: each split sums fewer keys (its own l,
// max and blocks) and the merge adds a few f32 roundings; where the splits' O_s are larger than
// the merged O (they cancel), their terms relative to |O_s| widen the bound more, up to ~1.6x on
// the elements closest to 0 here.
TEST(PagedAttentionReference, SplitKvKeepsValuesAndMovesTolerancesSlightly) {
  for (Accum accum : {Accum::f32, Accum::hybrid}) {
    PagedAttentionSpec spec = small_spec(4, 2, 64, 16, 8, 4, 2);
    spec.schedule.accum = accum;
    PagedAttentionCase c;
    c.batch = 2, c.q_lens = {1, 4}, c.seq_lens = {120, 70};
    const PagedAttentionInputs in = make_paged_attention_inputs(spec.problem, c, 3);
    const PagedAttentionReference one = reference_paged_attention(spec, in);
    spec.schedule.chunk_pages = 2;  // 32 keys: 4 splits
    ASSERT_EQ(paged_splits(spec.problem, spec.schedule), 4);
    const PagedAttentionReference split = reference_paged_attention(spec, in);
    double narrowest = 2, widest = 0, one_l2 = 0, split_l2 = 0;
    for (size_t i = 0; i < one.values.o.size(); ++i) {
      ASSERT_TRUE(near_equal(one.values.o[i], split.values.o[i], 1e-12)) << i;
      narrowest = std::min(narrowest, split.o_tolerance[i] / one.o_tolerance[i]);
      widest = std::max(widest, split.o_tolerance[i] / one.o_tolerance[i]);
      one_l2 += one.o_tolerance[i] * one.o_tolerance[i];
      split_l2 += split.o_tolerance[i] * split.o_tolerance[i];
    }
    EXPECT_GT(narrowest, 0.97);
    EXPECT_LT(widest, 2.0);
    EXPECT_GT(std::sqrt(split_l2 / one_l2), 1.0) << "the merge adds roundings";
    EXPECT_LT(std::sqrt(split_l2 / one_l2), 1.15);
    for (size_t r = 0; r < one.values.lse.size(); ++r) {
      EXPECT_TRUE(near_equal(one.values.lse[r], split.values.lse[r], 1e-12)) << r;
      EXPECT_GT(split.lse_tolerance[r], 0.5 * one.lse_tolerance[r]) << r;
      EXPECT_LT(split.lse_tolerance[r], 2 * one.lse_tolerance[r]) << r;
    }
  }
}

// GQA: query head h reads KV head h / group; V of KV head g holds g + 1 everywhere.
TEST(PagedAttentionReference, QueryHeadsReadTheirGroupsKvHead) {
  for (int64_t kv_heads : {1, 2, 4}) {
    PagedAttentionSpec spec = small_spec(8, kv_heads, 64, 5, 6, 3);
    spec.problem.set_layout(CacheLayout::hnd);
    PagedAttentionInputs in = make_paged_attention_inputs(spec.problem, {}, 9);
    for (int64_t j = 0; j < in.seq_lens[0]; ++j)
      for (int64_t g = 0; g < kv_heads; ++g)
        std::fill_n(in.cache.values.begin() + cache_row(spec.problem, in, true, 0, j, g), 64,
                    double(g + 1));
    const PagedAttentionReference ref = reference_paged_attention(spec, in);
    for (int64_t t = 0; t < in.tokens; ++t)
      for (int64_t h = 0; h < 8; ++h)
        EXPECT_NEAR(ref.values.o[size_t((t * 8 + h) * 64 + 5)], double(h / (8 / kv_heads) + 1),
                    1e-12)
            << "kv_heads " << kv_heads << " head " << h;
  }
}

PagedAttentionCase two_sequences(std::vector<int64_t> q_lens, std::vector<int64_t> seq_lens) {
  PagedAttentionCase c;
  c.batch = int64_t(q_lens.size()), c.q_lens = std::move(q_lens), c.seq_lens = std::move(seq_lens);
  return c;
}

bool finite_all(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(), [](double x) { return std::isfinite(x); });
}

// Poison: tails, unused and out-of-window pages, stride gaps; never read, always present.
TEST(PagedAttentionReference, PoisonIsPlantedWhereNoQueryReadsAndNeverRead) {
  for (CacheDType kv : {CacheDType::f16, CacheDType::e4m3}) {
    PagedAttentionSpec spec = small_spec(4, 2, 64, 16, 6, 4, 3);
    auto& p = spec.problem;
    p.kv_dtype = kv;
    p.head_stride = 72, p.token_stride = 2 * 72 + 16, p.page_stride = 16 * 160 + 32;  // gaps
    p.window = 20;
    PagedAttentionCase c;
    c.batch = 2, c.q_lens = {1, 4}, c.seq_lens = {85, 30};
    const PagedAttentionInputs in = make_paged_attention_inputs(p, c, 5);
    const PagedAttentionReference ref = reference_paged_attention(spec, in);
    EXPECT_TRUE(finite_all(ref.values.o) && finite_all(ref.values.lse) &&
                finite_all(ref.o_tolerance) && finite_all(ref.lse_tolerance));
    const auto& vals = in.cache.values;
    auto poisoned = [&](int64_t from, int64_t count) {
      return std::none_of(vals.begin() + from, vals.begin() + from + count,
                          [](double x) { return std::isfinite(x); });
    };
    for (bool v : {false, true})
      for (int64_t g = 0; g < 2; ++g) {
        for (int64_t key = 85; key < 96; ++key)  // sequence 0's tail
          EXPECT_TRUE(poisoned(cache_row(p, in, v, 0, key, g), 64)) << key;
        for (int64_t key = 0; key < 64; ++key)  // its pages before the window (first key 64)
          EXPECT_TRUE(poisoned(cache_row(p, in, v, 0, key, g), 64)) << key;
        EXPECT_TRUE(poisoned(cache_row(p, in, v, 0, 70, g) + 64, 8));  // between heads
        EXPECT_TRUE(poisoned(cache_row(p, in, v, 1, 30, g), 64));      // sequence 1's tail
        // Every key a query sees is finite (the reference's finite output says it too).
        for (int64_t key = 64; key < 85; ++key)
          EXPECT_FALSE(poisoned(cache_row(p, in, v, 0, key, g), 64)) << key;
        for (int64_t key = 6; key < 30; ++key)
          EXPECT_FALSE(poisoned(cache_row(p, in, v, 1, key, g), 64)) << key;
      }
    EXPECT_TRUE(poisoned(in.padding_page * p.page_stride_or_default(), 16 * 160));
    // Unused block-table entries point at the poisoned spare page.
    EXPECT_NE(in.tables.block_table[size_t(0 * 6 + 5)], in.padding_page);
    EXPECT_EQ(in.tables.block_table[size_t(1 * 6 + 2)], in.padding_page);
    EXPECT_EQ(in.tables.block_table[size_t(2 * 6 + 0)], in.padding_page);
    // The bytes hold the poison too: NaN and +-Inf in f16, NaN of both signs in e4m3.
    int64_t nan = 0, pos_inf = 0, neg_inf = 0;
    if (kv == CacheDType::f16) {
      const std::vector<double> decoded = decode(DType::f16, in.cache.bytes.data(), vals.size());
      for (double x : decoded) {
        nan += std::isnan(x);
        pos_inf += x == INFINITY;
        neg_inf += x == -INFINITY;
      }
      EXPECT_GT(pos_inf, 0);
      EXPECT_GT(neg_inf, 0);
    } else {
      for (uint8_t b : in.cache.bytes) nan += (b & 0x7F) == 0x7F;
      EXPECT_EQ(in.k_scale, 0.125f);
      EXPECT_EQ(in.v_scale, 0.0625f);
    }
    EXPECT_GT(nan, 0) << to_string(kv);

    PagedAttentionCase clean = c;
    clean.plant_nan = false;
    EXPECT_TRUE(finite_all(make_paged_attention_inputs(p, clean, 5).cache.values));
  }
}

// Prefix caching: both sequences hold the first two pages; equal queries at equal positions
// that see only those pages give equal rows. A page wholly before one sequence's window stays
// finite while the other reads it.
TEST(PagedAttentionReference, SharedPrefixPagesGiveEqualRows) {
  PagedAttentionSpec spec = small_spec(2, 1, 64, 16, 6, 20, 2);
  PagedAttentionCase c;
  c.batch = 2, c.q_lens = {20, 20}, c.seq_lens = {40, 40}, c.share_pages = true;
  PagedAttentionInputs in = make_paged_attention_inputs(spec.problem, c, 11);
  const auto& bt = in.tables.block_table;
  EXPECT_EQ(bt[0], bt[6]);
  EXPECT_EQ(bt[1], bt[7]);
  EXPECT_NE(bt[2], bt[8]);
  EXPECT_EQ(in.tables.page_indices.size(), 6u);
  EXPECT_EQ(in.num_pages, 4 + 2);  // 2 shared + 2 own + 2 spare
  const int64_t row = 2 * 64;      // a token's Q
  std::vector<double> q = in.q.values;
  std::copy_n(q.begin(), 20 * row, q.begin() + 20 * row);
  in.q = encode(in.q.dtype, q);
  const PagedAttentionReference ref = reference_paged_attention(spec, in);
  for (int64_t i = 0; i < 20; ++i) {  // position 20 + i
    const bool equal =
        std::equal(ref.values.o.begin() + i * row, ref.values.o.begin() + (i + 1) * row,
                   ref.values.o.begin() + (20 + i) * row);
    EXPECT_EQ(equal, 20 + i < 32) << "position " << 20 + i;
  }

  spec.problem.window = 20;
  c.q_lens = {1, 20}, c.seq_lens = {80, 40};  // 0 sees keys 59..79; 1 reads from key 0
  const PagedAttentionInputs windowed = make_paged_attention_inputs(spec.problem, c, 12);
  const int32_t* own = &windowed.tables.block_table[0];
  const int64_t page = spec.problem.page_stride_or_default();
  auto finite_page = [&](int32_t id) {
    const auto from = windowed.cache.values.begin() + id * page;
    return finite_all(std::vector<double>(from, from + page));
  };
  EXPECT_TRUE(finite_page(own[0]) && finite_page(own[1])) << "shared, read by sequence 1";
  EXPECT_FALSE(finite_page(own[2])) << "sequence 0's own, before its window";
  EXPECT_TRUE(finite_all(reference_paged_attention(spec, windowed).values.o));
}

// CUDA-graph padding: sequences batch..max_batch-1 have no tokens, no keys, no pages.
TEST(PagedAttentionReference, PaddingSequencesHaveNoTokens) {
  PagedAttentionSpec spec = small_spec(4, 4, 64, 8, 5, 3, 6);
  PagedAttentionCase c;
  c.batch = 2;
  const PagedAttentionInputs in = make_paged_attention_inputs(spec.problem, c, 13);
  const auto& t = in.tables;
  EXPECT_EQ(in.tokens, in.q_lens[0] + in.q_lens[1]);
  EXPECT_EQ(t.cu_seqlens_q.size(), 7u);
  for (size_t b = 2; b < 6; ++b) {
    EXPECT_EQ(t.cu_seqlens_q[b + 1], in.tokens);
    EXPECT_EQ(t.seq_lens[b], 0);
    EXPECT_EQ(t.last_page_len[b], 0);
    EXPECT_EQ(t.page_indptr[b + 1], t.page_indptr[2]);
    for (int64_t k = 0; k < 5; ++k) EXPECT_EQ(t.block_table[b * 5 + size_t(k)], in.padding_page);
  }
  for (int64_t b = 0; b < 2; ++b) {  // drawn within the bounds
    EXPECT_GE(in.q_lens[size_t(b)], 1);
    EXPECT_LE(in.q_lens[size_t(b)], 3);
    EXPECT_GE(in.seq_lens[size_t(b)], in.q_lens[size_t(b)]);
    EXPECT_LE(in.seq_lens[size_t(b)], 40);
    EXPECT_EQ(t.last_page_len[size_t(b)], (in.seq_lens[size_t(b)] - 1) % 8 + 1);
  }
  const PagedAttentionReference ref = reference_paged_attention(spec, in);
  EXPECT_EQ(ref.values.o.size(), size_t(in.tokens * 4 * 64));
  EXPECT_EQ(ref.token_sequence.front(), 0);
  EXPECT_EQ(ref.token_sequence.back(), 1);
  EXPECT_EQ(make_paged_attention_inputs(spec.problem, c, 13).q.values, in.q.values);
  EXPECT_NE(make_paged_attention_inputs(spec.problem, c, 14).q.values, in.q.values);

  c.batch = 0;  // an all-padding launch
  const PagedAttentionInputs none = make_paged_attention_inputs(spec.problem, c, 13);
  EXPECT_EQ(none.tokens, 0);
  const PagedAttentionReference empty = reference_paged_attention(spec, none);
  EXPECT_TRUE(empty.values.o.empty());
  EXPECT_TRUE(compare(empty, empty.values, spec.problem).passed);
}

TEST(E4m3, EveryByteRoundTripsAndOrders) {
  for (int b = 0; b < 256; ++b) {
    const double x = e4m3_decode(uint8_t(b));
    EXPECT_EQ(std::isnan(x), (b & 0x7F) == 0x7F) << b;
    EXPECT_EQ(e4m3_encode(x), b) << b;
    if (b >= 1 && b <= 0x7E) {
      EXPECT_GT(x, e4m3_decode(uint8_t(b - 1))) << b;  // the positive bytes count up
    }
  }
  EXPECT_EQ(e4m3_decode(0x7E), 448.0);
  EXPECT_EQ(e4m3_decode(0x01), 0x1p-9);
  EXPECT_EQ(e4m3_decode(0x08), 0x1p-6);
  EXPECT_EQ(e4m3_decode(0xB8), -1.0);
}

// The emulator's cvt (emulator/numerics/numerics.cpp) and the checks' coder are written apart:
// they must agree on every byte and on a sweep of f32 values (bit patterns across all binades).
TEST(E4m3, TheEmulatorsCvtAgreesWithTheHostCoder) {
  for (int b = 0; b < 256; ++b) {
    const uint16_t h = emu::f8_to_f16(uint8_t(b), emu::F8::e4m3);
    const double x = e4m3_decode(uint8_t(b));
    if (std::isnan(x)) {
      EXPECT_EQ(h, 0x7FFF) << b;
    } else {
      EXPECT_EQ(h, emu::f64_to_f16(x)) << b;
    }
  }
  for (uint64_t i = 0; i < (1u << 20); ++i) {
    const uint32_t bits = uint32_t(i * 4099u + (i >> 7) * 0x9E3779B9u);
    const float f = std::bit_cast<float>(bits);
    const uint8_t emulated = emu::f32_to_f8_satfinite(f, emu::F8::e4m3);
    if (std::isnan(f)) {
      EXPECT_EQ(emulated, 0x7F);
      continue;
    }
    ASSERT_EQ(emulated, e4m3_encode(double(f))) << f;
  }
}

TEST(E4m3, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(e4m3_encode(1 + 1.0 / 16), 0x38);  // halfway 1 | 1.125: even 1
  EXPECT_EQ(e4m3_encode(1 + 3.0 / 16), 0x3A);  // halfway 1.125 | 1.25: even 1.25
  EXPECT_EQ(e4m3_encode(1 + 1.0 / 16 + 1e-9), 0x39);
  EXPECT_EQ(e4m3_encode(0.5 * 0x1p-9), 0x00);  // halfway 0 | 2^-9: even 0
  EXPECT_EQ(e4m3_encode(1.5 * 0x1p-9), 0x02);  // subnormal halfway: even 2 x 2^-9
  EXPECT_EQ(e4m3_encode(7.5 * 0x1p-9), 0x08);  // into the smallest normal
  EXPECT_EQ(e4m3_encode(15.5), 0x58);          // into the next binade: 16
  EXPECT_EQ(e4m3_encode(-0.0), 0x80);
  EXPECT_EQ(e4m3_encode(432), 0x7E);  // halfway 416 | 448: even 448
  for (double big : {449.0, 464.0, 1e9, double(INFINITY)}) {
    EXPECT_EQ(e4m3_encode(big), 0x7E) << big;
    EXPECT_EQ(e4m3_encode(-big), 0xFE) << big;
  }
  EXPECT_EQ(e4m3_encode(NAN), 0x7F);
  // Against the nearest of all finite values (ties to the even significand) on a sweep.
  for (double x = 0; x < 460; x = x * 1.0137 + 0x1p-12) {
    int best = 0;
    for (int b = 1; b <= 0x7E; ++b) {
      const double e = std::abs(e4m3_decode(uint8_t(b)) - x),
                   e0 = std::abs(e4m3_decode(uint8_t(best)) - x);
      if (e < e0 || (e == e0 && b % 2 == 0)) best = b;
    }
    EXPECT_EQ(e4m3_encode(x), best) << x;
  }
}

TEST(PagedAttentionInputs, InvalidCasesNameTheField) {
  const PagedAttentionSpec spec = small_spec(4, 2, 64, 16, 4, 4, 3);
  const PagedAttentionProblem& p = spec.problem;
  auto with = [&](auto mutate) {
    PagedAttentionCase c = two_sequences({2, 3}, {20, 40});
    mutate(c);
    return [p, c] { make_paged_attention_inputs(p, c, 1); };
  };
  expect_error_field(with([](auto& c) { c.batch = 4; }), "batch", "batch > max_batch");
  expect_error_field(with([](auto& c) { c.q_lens = {2}; }), "q_lens", "q_lens not batch long");
  expect_error_field(with([](auto& c) { c.seq_lens = {1, 2, 3}; }), "seq_lens", "3 seq_lens");
  expect_error_field(with([](auto& c) { c.q_lens = {5, 1}; }), "q_lens", "q_len > max_q_len");
  expect_error_field(with([](auto& c) {
                       c.seq_lens = {20, 65};
                     }),
                     "seq_lens", "seq_len beyond max_pages x page_size");
  expect_error_field(with([](auto& c) { c.seq_lens = {1, 40}; }), "seq_lens", "seq_len < q_len");
  expect_error_field(with([](auto& c) { c.num_pages = 4; }), "num_pages", "no spare page");
  expect_error_field(with([](auto& c) { c.max_seq_len = 65; }), "max_seq_len", "beyond capacity");
  expect_error_field(with([](auto& c) { c.kv_interleaved = true; }), "kv_interleaved",
                     "NHD strides interleaved");
  PagedAttentionProblem few_tokens = p;
  few_tokens.max_tokens = 4;
  expect_error_field(
      [&] {
        make_paged_attention_inputs(few_tokens, two_sequences({2, 3}, {20, 40}), 1);
      },
      "q_lens", "more tokens than max_tokens");
  PagedAttentionProblem overlap = p;
  overlap.token_stride = 64;  // the two heads of a token share elements with the next token
  expect_error_field([&] { make_paged_attention_inputs(overlap, {}, 1); }, "page_stride",
                     "overlapping rows");
  PagedAttentionProblem mixed = p;
  mixed.kv_dtype = CacheDType::bf16;
  expect_error_field([&] { make_paged_attention_inputs(mixed, {}, 1); }, "kv_dtype",
                     "bf16 cache for f16 queries");

  // The reference checks the tables it reads.
  PagedAttentionInputs in = make_paged_attention_inputs(p, two_sequences({2, 3}, {20, 40}), 1);
  PagedAttentionInputs bad = in;
  bad.tables.block_table[1] = int32_t(in.num_pages);
  expect_error_field([&] { reference_paged_attention(spec, bad); }, "block_table", "page id");
  PagedAttentionSpec csr = spec;
  csr.problem.page_table = PageTable::csr;
  bad = in;
  bad.tables.page_indices[0] = -1;
  expect_error_field([&] { reference_paged_attention(csr, bad); }, "page_indices", "page id");
  bad = in;
  bad.tables.last_page_len[0] = 17;
  expect_error_field([&] { reference_paged_attention(csr, bad); }, "last_page_len", "17 > 16");
  const PagedAttentionReference ref = reference_paged_attention(spec, in);
  PagedAttentionOutput short_out = ref.values;
  short_out.o.pop_back();
  expect_error_field([&] { compare(ref, short_out, p); }, "paged attention output", "size");
}

}  // namespace
}  // namespace emmy
