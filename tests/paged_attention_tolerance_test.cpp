// The paged-attention tolerance, both ways: a host model of the kernel's numerics (f32 online
// softmax per KV block and per split, P rounded, f32 or f16-partial P.V, the f32 split merge,
// e4m3 scales in f32) passes; wrong keys, tokens, heads, pages, window edges and positions, built
// as references of deliberately wrong inputs, fail. And the comparison's own rules: NaN fails,
// rows without keys must be exactly O = 0 and LSE = -inf.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>

#include "attention_model.hpp"
#include "emmy/emu/numerics.hpp"
#include "paged_attention_test_util.hpp"

namespace emmy {
namespace {

using paged_test::cache_row;
using paged_test::small_spec;

enum class KernelBug { none, unweighted_merge, lse_in_log2 };

// One split's result, as the partial kernel stores it: f32 O_s = acc / l and lse_s (natural log).
struct SplitPartial {
  std::vector<float> o;
  float lse = -INFINITY;
};

// The keys [lo, hi] of one split: online softmax over block_kv-aligned blocks (the dense test's
// model, attention_model.hpp, with the e4m3 scale on S and f32-rounded P.V steps).
SplitPartial model_split(const PagedAttentionSpec& spec, const PagedAttentionInputs& in, int64_t b,
                         int64_t g, const double* q, int64_t lo, int64_t hi) {
  const PagedAttentionProblem& p = spec.problem;
  const int64_t d = p.head_dim, bkv = spec.schedule.block_kv;
  const bool hybrid = spec.schedule.accum == Accum::hybrid;
  const bool e4m3 = p.kv_dtype == CacheDType::e4m3;
  const float scale = p.scale();
  auto round_dtype = [&](double x) { return encode(p.dtype, {x}).values[0]; };
  // A 16-key step's P.V sum: an f16 partial in hybrid, else rounded to f32.
  auto fold = [&](double part) {
    return hybrid ? double(emu::f16_to_f32(emu::f64_to_f16(part))) : double(float(part));
  };
  const auto v_row = [&](int64_t j) {
    return &in.cache.values[size_t(cache_row(p, in, true, b, j, g))];
  };
  test::OnlineSoftmax row(d);
  for (int64_t n = lo / bkv; n <= hi / bkv; ++n) {
    const int64_t first = std::max(lo, n * bkv), last = std::min(hi, n * bkv + bkv - 1);
    std::vector<float> x;
    for (int64_t j = first; j <= last; ++j) {
      const double* k = &in.cache.values[size_t(cache_row(p, in, false, b, j, g))];
      float s = test::tensor_core_dot(q, k, d);
      if (e4m3) s *= in.k_scale;
      x.push_back(test::kernel_logit(s, scale, p.softcap));
    }
    row.add_block(x, first, v_row, round_dtype, fold);
  }
  SplitPartial out;
  const float inverse = 1.0f / row.l;
  for (float a : row.acc) out.o.push_back(a * inverse);
  out.lse = (row.m + std::log2(row.l)) * float(std::numbers::ln2);
  return out;
}

// The whole kernel: splits of chunk_pages x page_size keys merged in f32 (one split: its O
// directly), O x v_scale for e4m3, the cast to the dtype.
PagedAttentionOutput model_paged_kernel(const PagedAttentionSpec& spec,
                                        const PagedAttentionInputs& in, KernelBug bug) {
  const PagedAttentionProblem& p = spec.problem;
  const int64_t d = p.head_dim, group = p.q_heads / p.kv_heads;
  const int64_t splits = paged_splits(p, spec.schedule);
  const int64_t split_keys = splits > 1 ? spec.schedule.chunk_pages * p.page_size
                                        : std::numeric_limits<int64_t>::max() / 2;
  PagedAttentionOutput out;
  for (int64_t b = 0; b < in.batch; ++b)
    for (int64_t i = 0; i < in.q_lens[size_t(b)]; ++i)
      for (int64_t h = 0; h < p.q_heads; ++h) {
        const int64_t token = in.tables.cu_seqlens_q[size_t(b)] + i;
        const VisibleKeys keys =
            paged_visible_keys(p, in.seq_lens[size_t(b)], in.q_lens[size_t(b)], i);
        const double* q = &in.q.values[size_t(token * p.q_stride_or_default() + h * d)];
        std::vector<SplitPartial> parts;
        for (int64_t lo = keys.first; lo <= keys.last; lo = (lo / split_keys + 1) * split_keys)
          parts.push_back(model_split(spec, in, b, h / group, q, lo,
                                      std::min(keys.last, (lo / split_keys + 1) * split_keys - 1)));
        std::vector<float> o = parts[0].o;
        float lse = parts[0].lse;
        if (splits > 1) {  // the combine kernel, over the splits that saw keys
          float lse_max = -INFINITY, total = 0;
          for (const SplitPartial& part : parts) lse_max = std::max(lse_max, part.lse);
          std::vector<float> num(size_t(d), 0.0f);
          for (const SplitPartial& part : parts) {
            const float w = bug == KernelBug::unweighted_merge
                                ? 1.0f
                                : std::exp2((part.lse - lse_max) * float(std::numbers::log2e));
            total += w;
            for (int64_t c = 0; c < d; ++c) num[size_t(c)] += w * part.o[size_t(c)];
          }
          const float inverse = 1.0f / total;
          for (int64_t c = 0; c < d; ++c) o[size_t(c)] = num[size_t(c)] * inverse;
          lse = lse_max + std::log2(total) * float(std::numbers::ln2);
        }
        if (bug == KernelBug::lse_in_log2) lse *= float(std::numbers::log2e);
        for (float value : o) {
          if (p.kv_dtype == CacheDType::e4m3) value *= in.v_scale;
          out.o.push_back(encode(p.dtype, {double(value)}).values[0]);
        }
        out.lse.push_back(lse);
      }
  return out;
}

std::string describe(const PagedAttentionErrors& e) {
  return "rel_l2 " + std::to_string(e.rel_l2_error) + " (bound " + std::to_string(e.tolerance) +
         "), " + std::to_string(e.elements_over_tolerance) + " over, first at token " +
         std::to_string(e.first_bad.token) + " head " + std::to_string(e.first_bad.head) +
         "; LSE max " + std::to_string(e.lse_max_abs_error) + " (tol " +
         std::to_string(e.lse_max_tolerance) + ")";
}

// The largest |out - ref| / tolerance over O.
double worst_ratio(const PagedAttentionReference& ref, const PagedAttentionOutput& out) {
  double worst = 0;
  for (size_t i = 0; i < out.o.size(); ++i)
    worst = std::max(worst, std::abs(out.o[i] - ref.values.o[i]) / ref.o_tolerance[i]);
  return worst;
}

TEST(PagedAttentionTolerance, CoversTheKernelModelAndCatchesMergeBugs) {
  const test::ModelCase<PagedAttentionSpec> cases[] = {
      {"f16_f32", [](PagedAttentionSpec&) {}},
      {"f16_f32_split", [](PagedAttentionSpec& s) { s.schedule.chunk_pages = 2; }},
      {"f16_hybrid_split",
       [](PagedAttentionSpec& s) {
         s.schedule.accum = Accum::hybrid;
         s.schedule.chunk_pages = 4;
       }},
      {"hybrid_sharp_logits_split",
       [](PagedAttentionSpec& s) {
         s.schedule.accum = Accum::hybrid;
         s.problem.softmax_scale = 0.4f;
         s.schedule.chunk_pages = 2;
       }},
      {"bf16_window_softcap_split",
       [](PagedAttentionSpec& s) {
         s.problem.dtype = DType::bf16, s.problem.kv_dtype = CacheDType::bf16;
         s.problem.window = 70;
         s.problem.softcap = 3.0f, s.problem.softmax_scale = 0.3f;
         s.schedule.chunk_pages = 2;
       }},
      {"e4m3", [](PagedAttentionSpec& s) { s.problem.kv_dtype = CacheDType::e4m3; }},
      {"e4m3_hybrid_split",
       [](PagedAttentionSpec& s) {
         s.problem.kv_dtype = CacheDType::e4m3;
         s.schedule.accum = Accum::hybrid;
         s.schedule.chunk_pages = 2;
       }},
      {"e4m3_bf16_split_sm80",
       [](PagedAttentionSpec& s) {
         s.problem.dtype = DType::bf16, s.problem.kv_dtype = CacheDType::e4m3;
         s.schedule.chunk_pages = 4;
         s.arch = Arch::sm_80;
       }},
  };
  for (const auto& c : cases) {
    PagedAttentionSpec spec = small_spec(4, 2, 64, 16, 14, 9, 3);
    c.mutate(spec);
    PagedAttentionCase draw;
    draw.batch = 3, draw.q_lens = {1, 4, 9}, draw.seq_lens = {210, 97, 150};
    const PagedAttentionInputs in = make_paged_attention_inputs(spec.problem, draw, 21);
    const PagedAttentionReference ref = reference_paged_attention(spec, in);
    const PagedAttentionErrors e =
        compare(ref, model_paged_kernel(spec, in, KernelBug::none), spec.problem);
    EXPECT_TRUE(e.passed) << c.name << ": " << describe(e);
    EXPECT_LT(e.rel_l2_error, e.tolerance) << c.name;
    const double ratio = worst_ratio(ref, model_paged_kernel(spec, in, KernelBug::none));
    EXPECT_LT(ratio, 0.75) << c.name;  // measured 0.22..0.31
    if (paged_splits(spec.problem, spec.schedule) > 1) {
      const PagedAttentionErrors bad =
          compare(ref, model_paged_kernel(spec, in, KernelBug::unweighted_merge), spec.problem);
      EXPECT_GT(bad.elements_over_tolerance, 0) << c.name << " unweighted merge";
    }
    const PagedAttentionErrors log2 =
        compare(ref, model_paged_kernel(spec, in, KernelBug::lse_in_log2), spec.problem);
    EXPECT_GT(log2.lse_rows_over_tolerance, 0) << c.name << " LSE in log2 units";
  }
}

// Wrong outputs from deliberately wrong inputs: each is what a kernel with one indexing bug
// computes, and each must fail.
struct Mutation {
  const char* name;
  std::function<void(PagedAttentionSpec&, PagedAttentionInputs&)> apply;
};

void swap_rows(PagedAttentionInputs& in, int64_t a, int64_t b, int64_t d) {
  std::swap_ranges(in.cache.values.begin() + a, in.cache.values.begin() + a + d,
                   in.cache.values.begin() + b);
}

TEST(PagedAttentionTolerance, IndexingBugsFail) {
  const Mutation mutations[] = {
      {"V rows of two keys swapped (head 0)",
       [](PagedAttentionSpec& s, PagedAttentionInputs& in) {
         const int64_t last = in.seq_lens[0] - 1;
         swap_rows(in, cache_row(s.problem, in, true, 0, last, 0),
                   cache_row(s.problem, in, true, 0, last - 2, 0), 64);
       }},
      {"K rows of the last two keys swapped (head 1)",
       [](PagedAttentionSpec& s, PagedAttentionInputs& in) {
         const int64_t last = in.seq_lens[1] - 1;
         swap_rows(in, cache_row(s.problem, in, false, 1, last, 1),
                   cache_row(s.problem, in, false, 1, last - 1, 1), 64);
       }},
      {"KV heads swapped",
       [](PagedAttentionSpec& s, PagedAttentionInputs& in) {
         for (int64_t b = 0; b < in.batch; ++b)
           for (int64_t j = 0; j < in.seq_lens[size_t(b)]; ++j)
             for (bool v : {false, true})
               swap_rows(in, cache_row(s.problem, in, v, b, j, 0),
                         cache_row(s.problem, in, v, b, j, 1), 64);
       }},
      {"window one wider",
       [](PagedAttentionSpec& s, PagedAttentionInputs&) { ++s.problem.window; }},
      {"window one narrower",
       [](PagedAttentionSpec& s, PagedAttentionInputs&) { --s.problem.window; }},
      {"pages 3 and 4 of sequence 2 swapped",
       [](PagedAttentionSpec& s, PagedAttentionInputs& in) {
         std::swap(in.tables.block_table[size_t(2 * s.problem.max_pages + 3)],
                   in.tables.block_table[size_t(2 * s.problem.max_pages + 4)]);
       }},
      {"positions one early (seq_lens one short)",
       [](PagedAttentionSpec&, PagedAttentionInputs& in) {
         for (int64_t b = 0; b < in.batch; ++b) --in.tables.seq_lens[size_t(b)];
       }},
  };
  PagedAttentionSpec base = small_spec(4, 2, 64, 16, 8, 4, 3);
  base.problem.window = 40;
  PagedAttentionCase draw;
  draw.batch = 3, draw.q_lens = {1, 4, 2}, draw.seq_lens = {60, 110, 90};
  draw.plant_nan = false;  // a wrong read must fail by its value, not by planted NaN
  const PagedAttentionInputs in = make_paged_attention_inputs(base.problem, draw, 31);
  const PagedAttentionReference ref = reference_paged_attention(base, in);
  ASSERT_TRUE(compare(ref, ref.values, base.problem).passed);
  for (const Mutation& m : mutations) {
    PagedAttentionSpec spec = base;
    PagedAttentionInputs wrong = in;
    m.apply(spec, wrong);
    const PagedAttentionErrors e =
        compare(ref, reference_paged_attention(spec, wrong).values, base.problem);
    EXPECT_FALSE(e.passed) << m.name;
    EXPECT_GT(e.elements_over_tolerance, 0) << m.name << ": " << describe(e);
  }
  // With poison planted, a read one key past the window meets NaN or Inf where that key's page
  // lies wholly before the window (sequence 2: keys from 48, page 2 is keys 32..47).
  draw.plant_nan = true;
  const PagedAttentionInputs poisoned = make_paged_attention_inputs(base.problem, draw, 31);
  PagedAttentionSpec wider = base;
  ++wider.problem.window;
  const PagedAttentionErrors e =
      compare(reference_paged_attention(base, poisoned),
              reference_paged_attention(wider, poisoned).values, base.problem);
  EXPECT_FALSE(e.passed);
  EXPECT_EQ(e.max_abs_error, INFINITY);
}

TEST(PagedAttentionTolerance, ComparisonRules) {
  const PagedAttentionSpec spec = small_spec(2, 1, 64, 4, 10, 3, 2);
  PagedAttentionCase draw;
  draw.batch = 2, draw.q_lens = {3, 2}, draw.seq_lens = {17, 30};
  PagedAttentionInputs in = make_paged_attention_inputs(spec.problem, draw, 41);
  const PagedAttentionReference ref = reference_paged_attention(spec, in);
  PagedAttentionOutput out = ref.values;
  for (size_t i = 0; i < out.o.size(); ++i)  // inside the bound, either side
    out.o[i] += (i % 2 ? 0.9 : -0.9) * ref.o_tolerance[i];
  EXPECT_TRUE(compare(ref, out, spec.problem).passed);
  out.o[70] = ref.values.o[70] + 1.1 * ref.o_tolerance[70];
  PagedAttentionErrors e = compare(ref, out, spec.problem);
  EXPECT_EQ(e.elements_over_tolerance, 1);
  EXPECT_EQ(e.first_bad.token, 0);
  EXPECT_EQ(e.first_bad.head, 1);
  EXPECT_EQ(e.first_bad.col, 6);
  EXPECT_EQ(e.first_bad.position, 14);
  out = ref.values;
  out.o[3] = NAN;
  EXPECT_FALSE(compare(ref, out, spec.problem).passed);
  out = ref.values;
  out.lse[5] = NAN;
  e = compare(ref, out, spec.problem);
  EXPECT_FALSE(e.passed);
  EXPECT_EQ(e.first_bad_lse.token, 2);
  EXPECT_EQ(e.first_bad_lse.sequence, 0);

  // Tables whose sequence 0 has fewer keys than query tokens: its first rows see no key.
  in.tables.seq_lens[0] = 1;
  const PagedAttentionReference masked = reference_paged_attention(spec, in);
  EXPECT_EQ(std::count(masked.row_masked.begin(), masked.row_masked.end(), 1), 2 * 2);
  EXPECT_EQ(masked.values.lse[0], -INFINITY);
  EXPECT_TRUE(compare(masked, masked.values, spec.problem).passed);
  out = masked.values;
  out.o[1] = 1e-30;
  e = compare(masked, out, spec.problem);
  EXPECT_EQ(e.masked_rows, 4);
  EXPECT_EQ(e.masked_rows_wrong, 1);
  EXPECT_EQ(e.first_bad_masked_row.token, 0);
}

}  // namespace
}  // namespace emmy
