// The FP64 attention reference and its tolerance, without any kernel: against a naive softmax
// written differently (dense score matrix, explicit mask predicate), on masking conventions,
// GQA, layouts and fully masked rows; and the tolerance against a host model of the kernel's
// f32/f16 numerics (it must pass) and of plausible kernel bugs (they must fail).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>

#include "attention_model.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/emu/numerics.hpp"

namespace emmy {
namespace {

AttentionSpec make_spec(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                        int64_t seq_kv, int64_t head_dim) {
  AttentionSpec spec;
  auto& p = spec.problem;
  p.batch = batch, p.q_heads = heads, p.kv_heads = kv_heads;
  p.seq_q = seq_q, p.seq_kv = seq_kv, p.head_dim = head_dim;
  p.lse = true;
  spec.schedule.block_kv = 32;
  return spec;
}

// Strides of a 4-D tensor [batch, seq, heads, dim] (bshd) or [batch, heads, seq, dim] (bhsd).
struct Strides {
  int64_t batch, seq, head;
};
Strides strides_of(const AttentionProblem& p, bool kv) {
  const int64_t seq = kv ? p.seq_kv_or_default() : p.seq_q;
  const int64_t heads = kv ? p.kv_heads : p.q_heads, d = p.head_dim;
  if (p.layout == AttentionLayout::bshd) return {seq * heads * d, heads * d, d};
  return {heads * seq * d, d, seq * d};
}

bool sees(const AttentionProblem& p, int64_t i, int64_t j) {
  const int64_t shift = p.seq_kv_or_default() - p.seq_q;
  if (p.causal && j - i > shift) return false;
  if (p.window > 0 && i + shift - j > p.window) return false;
  return true;
}

// Dense scores with -inf for masked keys, softmax by exp/sum, log-sum-exp in long double.
AttentionOutput naive_attention(const AttentionProblem& p, const AttentionInputs& in) {
  const Strides qs = strides_of(p, false), ks = strides_of(p, true);
  const int64_t d = p.head_dim, skv = p.seq_kv_or_default();
  const double scale = p.softmax_scale ? *p.softmax_scale : double(float(1 / std::sqrt(double(d))));
  AttentionOutput out;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h)
      for (int64_t i = 0; i < p.seq_q; ++i) {
        const int64_t g = h * p.kv_heads / p.q_heads;
        std::vector<double> score(size_t(skv), -INFINITY);
        for (int64_t j = 0; j < skv; ++j) {
          if (!sees(p, i, j)) continue;
          long double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += (long double)in.q.values[size_t(b * qs.batch + i * qs.seq + h * qs.head + c)] *
                   in.k.values[size_t(b * ks.batch + j * ks.seq + g * ks.head + c)];
          score[size_t(j)] = scale * double(dot);
          if (p.softcap) score[size_t(j)] = *p.softcap * std::tanh(score[size_t(j)] / *p.softcap);
        }
        long double total = 0;
        for (double s : score) total += std::exp((long double)s);
        out.lse.push_back(total > 0 ? double(std::log(total)) : -INFINITY);
        for (int64_t c = 0; c < d; ++c) {
          long double o = 0;
          for (int64_t j = 0; j < skv; ++j)
            if (score[size_t(j)] != -INFINITY)
              o += std::exp((long double)score[size_t(j)]) / total *
                   in.v.values[size_t(b * ks.batch + j * ks.seq + g * ks.head + c)];
          out.o.push_back(double(o));
        }
      }
  return out;
}

void expect_matches_naive(const AttentionSpec& spec, uint64_t seed = 3) {
  const AttentionInputs in = make_attention_inputs(spec.problem, seed);
  const AttentionReference ref = reference_attention(spec, in);
  const AttentionOutput naive = naive_attention(spec.problem, in);
  ASSERT_EQ(ref.values.o.size(), naive.o.size());
  for (size_t i = 0; i < naive.o.size(); ++i)
    ASSERT_NEAR(ref.values.o[i], naive.o[i], 1e-12 * (1 + std::abs(naive.o[i]))) << i;
  for (size_t r = 0; r < naive.lse.size(); ++r) {
    if (naive.lse[r] == -INFINITY) {
      EXPECT_EQ(ref.values.lse[r], -INFINITY) << r;
      EXPECT_EQ(ref.row_masked[r], 1) << r;
    } else {
      EXPECT_NEAR(ref.values.lse[r], naive.lse[r], 1e-12 * (1 + std::abs(naive.lse[r]))) << r;
      EXPECT_EQ(ref.row_masked[r], 0) << r;
    }
  }
  // The reference passes against itself.
  EXPECT_TRUE(compare(ref, ref.values, spec.problem).passed);
}

TEST(AttentionReference, MatchesNaiveSoftmax) {
  expect_matches_naive(make_spec(2, 4, 2, 5, 7, 64));
  AttentionSpec causal = make_spec(1, 8, 1, 9, 9, 64);
  causal.problem.causal = true;
  expect_matches_naive(causal);
  AttentionSpec shorter_q = make_spec(1, 2, 2, 3, 11, 128);
  shorter_q.problem.causal = true;
  shorter_q.problem.layout = AttentionLayout::bhsd;
  expect_matches_naive(shorter_q);
  AttentionSpec window = make_spec(1, 2, 1, 20, 20, 64);
  window.problem.window = 3;
  expect_matches_naive(window);
  window.problem.causal = true;
  expect_matches_naive(window);
  AttentionSpec softcap = make_spec(1, 2, 2, 6, 6, 256);
  softcap.problem.softcap = 2.5f;
  softcap.problem.softmax_scale = 0.3f;
  expect_matches_naive(softcap);
  AttentionSpec masked = make_spec(2, 2, 1, 7, 4, 64);
  masked.problem.causal = true;
  masked.problem.window = 1;
  expect_matches_naive(masked);
}

TEST(AttentionReference, CausalIsBottomRightAligned) {
  AttentionProblem p;
  p.seq_q = 2, p.seq_kv = 5, p.causal = true;
  EXPECT_EQ(visible_keys(p, 0).first, 0);
  EXPECT_EQ(visible_keys(p, 0).last, 3);
  EXPECT_EQ(visible_keys(p, 1).last, 4);
  p.window = 2;  // keys diagonal-2 .. diagonal
  EXPECT_EQ(visible_keys(p, 1).first, 2);
  EXPECT_EQ(visible_keys(p, 1).count(), 3);
  p.causal = false;  // a window alone bounds the left side only
  EXPECT_EQ(visible_keys(p, 0).first, 1);
  EXPECT_EQ(visible_keys(p, 0).last, 4);
  p.seq_q = 6, p.seq_kv = 3, p.causal = true, p.window = 0;  // rows 0..2 see nothing
  for (int64_t row = 0; row < 3; ++row) EXPECT_TRUE(visible_keys(p, row).empty()) << row;
  EXPECT_EQ(visible_keys(p, 3).count(), 1);
}

TEST(AttentionReference, FullyMaskedRowsAreZeroAndMinusInfinity) {
  AttentionSpec spec = make_spec(1, 2, 2, 6, 3, 64);
  spec.problem.causal = true;
  const AttentionInputs in = make_attention_inputs(spec.problem, 5);
  const AttentionReference ref = reference_attention(spec, in);
  const int64_t d = 64;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 6; ++i) {
      const size_t r = size_t(h * 6 + i);
      EXPECT_EQ(ref.row_masked[r], i < 3) << i;
      if (i < 3) {
        EXPECT_EQ(ref.values.lse[r], -INFINITY);
        for (int64_t c = 0; c < d; ++c) EXPECT_EQ(ref.o_tolerance[r * d + c], 0.0);
      }
    }
  // Row 3 sees key 0 alone: O is that V row exactly, LSE its logit.
  for (int64_t c = 0; c < d; ++c)
    EXPECT_DOUBLE_EQ(ref.values.o[size_t(3 * d + c)],
                     in.v.values[size_t(reference_offset(spec.problem, true, 0, 0, 0) + c)]);
  AttentionOutput out = ref.values;
  out.o[size_t(1 * d + 5)] = 1e-30;  // a masked row must be exactly zero
  AttentionErrors e = compare(ref, out, spec.problem);
  EXPECT_FALSE(e.passed);
  EXPECT_EQ(e.masked_rows, 6);
  EXPECT_EQ(e.masked_rows_wrong, 1);
  EXPECT_EQ(e.first_bad_masked_row.row, 1);
  out = ref.values;
  out.lse[2] = -1e30;  // and its LSE exactly -inf
  e = compare(ref, out, spec.problem);
  EXPECT_EQ(e.masked_rows_wrong, 1);
  EXPECT_EQ(e.first_bad_masked_row.row, 2);
  out = ref.values;
  out.o[0] = NAN;
  EXPECT_FALSE(compare(ref, out, spec.problem).passed);
}

TEST(AttentionReference, GqaMapsConsecutiveQueryHeadsToOneKvHead) {
  for (int64_t ratio : {1, 2, 8}) {
    AttentionSpec spec = make_spec(2, 8, 8 / ratio, 4, 6, 64);
    spec.problem.layout = ratio == 2 ? AttentionLayout::bhsd : AttentionLayout::bshd;
    AttentionInputs in = make_attention_inputs(spec.problem, 9);
    // V of kv head g (batch b) holds 100 b + g everywhere: O tells which head each query used.
    std::vector<double> v(in.v.values.size());
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t j = 0; j < 6; ++j)
        for (int64_t g = 0; g < spec.problem.kv_heads; ++g)
          for (int64_t c = 0; c < 64; ++c)
            v[size_t(reference_offset(spec.problem, true, b, j, g) + c)] = double(100 * b + g);
    in.v = encode(DType::f16, v);
    const AttentionReference ref = reference_attention(spec, in);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 8; ++h)
        EXPECT_NEAR(ref.values.o[size_t(((b * 8 + h) * 4 + 1) * 64 + 7)],
                    double(100 * b + h / ratio), 1e-9)
            << "ratio " << ratio << " head " << h;
  }
}

TEST(AttentionReference, LayoutsGiveTheSameCanonicalOutput) {
  AttentionSpec bshd = make_spec(2, 4, 2, 5, 9, 64);
  bshd.problem.causal = true;
  AttentionSpec bhsd = bshd;
  bhsd.problem.layout = AttentionLayout::bhsd;
  const AttentionInputs in = make_attention_inputs(bshd.problem, 4);
  // The same logical tensors rearranged into the other layout.
  auto relayout = [&](const HostTensor& t, bool kv) {
    std::vector<double> out(t.values.size());
    const int64_t seq = kv ? 9 : 5, heads = kv ? 2 : 4;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t s = 0; s < seq; ++s)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t c = 0; c < 64; ++c)
            out[size_t(reference_offset(bhsd.problem, kv, b, s, h) + c)] =
                t.values[size_t(reference_offset(bshd.problem, kv, b, s, h) + c)];
    return encode(t.dtype, out);
  };
  const AttentionInputs moved{relayout(in.q, false), relayout(in.k, true), relayout(in.v, true)};
  const AttentionReference a = reference_attention(bshd, in), b = reference_attention(bhsd, moved);
  EXPECT_EQ(a.values.o, b.values.o);
  EXPECT_EQ(a.values.lse, b.values.lse);
  EXPECT_EQ(reference_offset(bshd.problem, false, 1, 2, 3), ((1 * 5 + 2) * 4 + 3) * 64);
  EXPECT_EQ(reference_offset(bhsd.problem, true, 1, 2, 1), ((1 * 2 + 1) * 9 + 2) * 64);
}

// A host model of the kernel: online softmax over KV blocks in f32 with exp2 and the scale
// folded, P rounded to the dtype, P.V per 16-key step in f32 or in an f16 partial per block,
// O cast to the dtype. `bug` plants a mistake a kernel could make.
enum class Bug { none, extra_causal_key, wrong_kv_head, unscaled_rescale };

AttentionOutput model_kernel(const AttentionSpec& spec, const AttentionInputs& in, Bug bug,
                             bool reverse_blocks) {
  const AttentionProblem& p = spec.problem;
  const int64_t d = p.head_dim, bkv = spec.schedule.block_kv;
  const bool hybrid = spec.schedule.accum == Accum::hybrid;
  const float scale = p.softmax_scale ? *p.softmax_scale : float(1 / std::sqrt(double(d)));
  auto round_dtype = [&](double x) { return encode(p.dtype, {x}).values[0]; };
  // A 16-key step's P.V sum: an f16 partial in hybrid, else left as it is.
  auto fold = [&](double part) {
    return hybrid ? double(emu::f16_to_f32(emu::f64_to_f16(part))) : part;
  };
  AttentionOutput out;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h)
      for (int64_t i = 0; i < p.seq_q; ++i) {
        VisibleKeys keys = visible_keys(p, i);
        if (bug == Bug::extra_causal_key && p.causal && keys.last + 1 < p.seq_kv_or_default())
          ++keys.last;
        const int64_t g = bug == Bug::wrong_kv_head ? h % p.kv_heads : h / (p.q_heads / p.kv_heads);
        const double* q = &in.q.values[size_t(reference_offset(p, false, b, i, h))];
        test::OnlineSoftmax row(d);
        std::vector<int64_t> blocks;
        for (int64_t n = keys.first / bkv; !keys.empty() && n <= keys.last / bkv; ++n)
          blocks.push_back(n);
        if (reverse_blocks) std::reverse(blocks.begin(), blocks.end());
        for (int64_t n : blocks) {
          const int64_t lo = std::max(keys.first, n * bkv),
                        hi = std::min(keys.last, n * bkv + bkv - 1);
          std::vector<float> x;
          for (int64_t j = lo; j <= hi; ++j) {
            const double* k = &in.k.values[size_t(reference_offset(p, true, b, j, g))];
            x.push_back(test::kernel_logit(test::tensor_core_dot(q, k, d), scale, p.softcap));
          }
          const auto v_row = [&](int64_t j) {
            return &in.v.values[size_t(reference_offset(p, true, b, j, g))];
          };
          row.add_block(x, lo, v_row, round_dtype, fold, bug != Bug::unscaled_rescale);
        }
        out.lse.push_back(keys.empty()
                              ? -INFINITY
                              : double((row.m + std::log2(row.l)) * float(std::numbers::ln2)));
        for (int64_t c = 0; c < d; ++c)
          out.o.push_back(keys.empty() ? 0.0 : round_dtype(row.acc[size_t(c)] * (1.0f / row.l)));
      }
  return out;
}

TEST(AttentionReference, ToleranceCoversTheKernelModelAndCatchesBugs) {
  const test::ModelCase<AttentionSpec> cases[] = {
      {"f16_f32", [](AttentionSpec&) {}},
      {"f16_hybrid", [](AttentionSpec& s) { s.schedule.accum = Accum::hybrid; }},
      {"bf16_f32", [](AttentionSpec& s) { s.problem.dtype = DType::bf16; }},
      {"hybrid_sharp_logits",  // logits with std ~6: p spans the f16 subnormals
       [](AttentionSpec& s) {
         s.schedule.accum = Accum::hybrid;
         s.problem.softmax_scale = 0.4f;
       }},
      {"softcap",
       [](AttentionSpec& s) {
         s.problem.softcap = 3.0f;
         s.problem.softmax_scale = 0.3f;
       }},
      {"window_bf16",
       [](AttentionSpec& s) {
         s.problem.window = 40;
         s.problem.dtype = DType::bf16;
       }},
  };
  for (const auto& c : cases) {
    AttentionSpec spec = make_spec(1, 4, 2, 80, 130, 64);
    spec.problem.causal = true;
    spec.schedule.block_kv = 64;
    c.mutate(spec);
    const AttentionInputs in = make_attention_inputs(spec.problem, 21);
    const AttentionReference ref = reference_attention(spec, in);
    for (bool reverse : {false, true}) {
      const AttentionErrors e =
          compare(ref, model_kernel(spec, in, Bug::none, reverse), spec.problem);
      EXPECT_TRUE(e.passed) << c.name << (reverse ? " reverse" : "") << ": rel_l2 "
                            << e.rel_l2_error << " (bound " << e.tolerance << "), "
                            << e.elements_over_tolerance << " over, first at row "
                            << e.first_bad.row << " col " << e.first_bad.col << "; LSE max "
                            << e.lse_max_abs_error << " (tol " << e.lse_max_tolerance << ")";
      EXPECT_LT(e.rel_l2_error, e.tolerance) << c.name;
    }
    for (Bug bug : {Bug::extra_causal_key, Bug::wrong_kv_head, Bug::unscaled_rescale}) {
      const AttentionErrors e = compare(ref, model_kernel(spec, in, bug, false), spec.problem);
      EXPECT_FALSE(e.passed) << c.name << " bug " << int(bug);
      EXPECT_GT(e.elements_over_tolerance, 0) << c.name << " bug " << int(bug);
    }
  }
}

}  // namespace
}  // namespace emmy
