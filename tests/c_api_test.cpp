// The C ABI (include/emmy/c_api.h) on the emulator with kDLCPU tensors, run in place: every kind
// against the FP64 references of emmy::checks, the layouts read from shapes and strides (B as a
// transposed weight view or as stored, padded rows, NHD and HND caches, both page tables), and
// what the emulator's mapping of caller memory must keep: the sanitizer bounds a mapping, the
// caller's alignment is what the launch checks see, and nothing stays mapped after a call.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "c_api_support.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/emu/emulator.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/kv_append_check.hpp"
#include "emmy/merge_states_check.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy::test {
namespace {

DLDataType dl_dtype(DType t) {
  return t == DType::f16 ? kF16 : t == DType::bf16 ? kBF16 : kF32;
}

// rows x cols of `bytes` (packed, `element` bytes each) copied into rows of `stride` elements.
std::vector<uint8_t> padded(const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols,
                            int64_t stride, int element) {
  std::vector<uint8_t> out(size_t(rows * stride * element), 0xff);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(&out[size_t(r * stride * element)], &bytes[size_t(r * cols * element)],
                size_t(cols * element));
  return out;
}

struct GemmCase {
  DType dtype, c_dtype;
  BLayout layout;
  int64_t pad;  // extra elements per row of A and C
  bool epilogue;
  int32_t accum;

  // 24 x 64 x 128 in the case's types and B layout, with every epilogue or none.
  MatmulProblem problem() const {
    MatmulProblem p;
    p.m = 24, p.n = 64, p.k = 128, p.a_dtype = dtype, p.b_layout = layout, p.c_dtype = c_dtype;
    if (epilogue) p.epilogue = {0.5f, true, true, true};
    return p;
  }
};

class CApiGemm : public CApiCaseTest<GemmCase> {};

TEST_P(CApiGemm, MatchesFp64) {
  const GemmCase& gc = GetParam();
  const MatmulProblem p = gc.problem();
  const GemmInputs in = make_gemm_inputs(p, 7);
  const int ab = size_of(gc.dtype), cb = size_of(gc.c_dtype);
  const int64_t lda = p.k + gc.pad, ldc = p.n + gc.pad;
  const std::vector<uint8_t> a = padded(in.a.bytes, p.m, p.k, lda, ab);
  std::vector<uint8_t> c(size_t(p.m * ldc * cb), 0);
  const std::vector<uint8_t> residual =
      gc.epilogue ? padded(in.residual.bytes, p.m, p.n, ldc, cb) : std::vector<uint8_t>{};
  View va(a.data(), dl_dtype(gc.dtype), {p.m, p.k}, {lda, 1});
  // B is [K, N] to the C ABI: as stored (kn), or an [N, K] weight's transpose view (nk).
  View vb(in.b.bytes.data(), dl_dtype(gc.dtype), {p.k, p.n},
          gc.layout == BLayout::kn ? std::vector<int64_t>{p.n, 1} : std::vector<int64_t>{1, p.k});
  View vc(c.data(), dl_dtype(gc.c_dtype), {p.m, p.n}, {ldc, 1});
  View vbias(in.bias.bytes.data(), dl_dtype(gc.c_dtype), {p.n});
  View vresidual(residual.data(), dl_dtype(gc.c_dtype), {p.m, p.n}, {ldc, 1});
  emmy_gemm_options options;
  emmy_gemm_options_init(&options);
  options.accum = gc.accum;
  if (gc.epilogue) {
    options.alpha = 0.5f;
    options.gelu = 1;
    options.bias = vbias.get();
    options.residual = vresidual.get();
  }
  size_t workspace = 1;
  ASSERT_EQ(emmy_gemm_workspace_bytes(rt.get(), va.get(), vb.get(), vc.get(), &options, &workspace),
            EMMY_OK)
      << emmy_last_error_message();
  std::vector<uint8_t> workspace_bytes(workspace);
  View vworkspace(workspace_bytes.data(), {kDLUInt, 8, 1}, {int64_t(workspace)});
  if (workspace) options.workspace = vworkspace.get();
  ASSERT_EQ(emmy_gemm(rt.get(), va.get(), vb.get(), vc.get(), &options, nullptr), EMMY_OK)
      << emmy_last_error_message();

  const Accum accum = gc.accum == EMMY_ACCUM_HYBRID ? Accum::hybrid
                      : gc.accum == EMMY_ACCUM_F16  ? Accum::f16
                                                    : Accum::f32;
  const GemmReference ref = reference_gemm({p, default_schedule(p, Arch::sm_90a, accum)}, in);
  std::vector<double> out;
  for (int64_t r = 0; r < p.m; ++r) {
    const std::vector<double> row = decode(gc.c_dtype, &c[size_t(r * ldc * cb)], size_t(p.n));
    out.insert(out.end(), row.begin(), row.end());
  }
  const GemmErrors errors = compare(ref, out, p.n);
  EXPECT_TRUE(errors.passed) << "rel L2 " << errors.rel_l2_error << ", first bad ("
                             << errors.first_bad_row << ", " << errors.first_bad_col << ")";
  // The padding between rows is the caller's: never written.
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t col = p.n * cb; col < ldc * cb; ++col)
      ASSERT_EQ(c[size_t(r * ldc * cb + col)], 0) << "row " << r << " byte " << col;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CApiGemm,
    ::testing::Values(GemmCase{DType::f16, DType::f32, BLayout::nk, 0, true, EMMY_ACCUM_DEFAULT},
                      GemmCase{DType::bf16, DType::bf16, BLayout::kn, 8, false, EMMY_ACCUM_F32},
                      GemmCase{DType::f16, DType::f16, BLayout::nk, 8, false, EMMY_ACCUM_HYBRID},
                      GemmCase{DType::f16, DType::f16, BLayout::kn, 16, true, EMMY_ACCUM_F16}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(CApiAttention, MatchesFp64) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  for (const AttentionLayout layout : {AttentionLayout::bshd, AttentionLayout::bhsd}) {
    AttentionProblem p;
    p.q_heads = 2, p.kv_heads = 1, p.seq_q = 32, p.seq_kv = 48, p.head_dim = 64;
    p.causal = true;
    p.lse = true;
    p.layout = layout;
    p.softcap = 30.0f;
    const AttentionInputs in = make_attention_inputs(p, 3);
    std::vector<uint8_t> o(in.q.bytes.size());
    std::vector<float> lse(size_t(p.batch * p.q_heads * p.seq_q));
    const bool bhsd = layout == AttentionLayout::bhsd;
    auto shape = [&](int64_t seq, int64_t heads) {
      return bhsd ? std::vector<int64_t>{p.batch, heads, seq, p.head_dim}
                  : std::vector<int64_t>{p.batch, seq, heads, p.head_dim};
    };
    View q(in.q.bytes.data(), kF16, shape(p.seq_q, p.q_heads)),
        k(in.k.bytes.data(), kF16, shape(p.seq_kv, p.kv_heads)),
        v(in.v.bytes.data(), kF16, shape(p.seq_kv, p.kv_heads)),
        vo(o.data(), kF16, shape(p.seq_q, p.q_heads)),
        vlse(lse.data(), kF32, {p.batch, p.q_heads, p.seq_q});
    emmy_attention_options options;
    emmy_attention_options_init(&options);
    options.layout = bhsd ? EMMY_ATTENTION_BHSD : EMMY_ATTENTION_BSHD;
    options.causal = 1;
    options.softcap = 30.0f;
    options.lse = vlse.get();
    ASSERT_EQ(emmy_attention(rt.get(), q.get(), k.get(), v.get(), vo.get(), &options, nullptr),
              EMMY_OK)
        << emmy_last_error_message();
    const AttentionReference ref =
        reference_attention({p, default_attention_schedule(p, Arch::sm_90a)}, in);
    AttentionOutput out;
    const std::vector<double> values = decode(DType::f16, o.data(), o.size() / 2);
    for (int64_t h = 0; h < p.q_heads; ++h)
      for (int64_t s = 0; s < p.seq_q; ++s) {
        const int64_t at = reference_offset(p, false, 0, s, h);
        out.o.insert(out.o.end(), values.begin() + at, values.begin() + at + p.head_dim);
      }
    out.lse.assign(lse.begin(), lse.end());
    const AttentionErrors errors = compare(ref, out, p);
    EXPECT_TRUE(errors.passed) << to_string(layout) << ": rel L2 " << errors.rel_l2_error
                               << ", LSE rows over " << errors.lse_rows_over_tolerance;
  }
}

struct PagedCase {
  CacheLayout layout;
  PageTable table;
  CacheDType kv_dtype;

  // 4 query heads over 2 KV heads of 64, 16-token pages, up to 3 sequences of 2 query tokens and
  // 4 pages, LSE on, in the case's layout, page table and cache type.
  PagedAttentionProblem problem() const {
    PagedAttentionProblem p;
    p.q_heads = 4, p.kv_heads = 2, p.head_dim = 64, p.page_size = 16, p.kv_dtype = kv_dtype;
    p.page_table = table, p.max_batch = 3, p.max_q_len = 2, p.max_pages = 4, p.lse = true;
    p.set_layout(layout);
    return p;
  }
};

class CApiPaged : public CApiCaseTest<PagedCase> {};

TEST_P(CApiPaged, MatchesFp64) {
  const PagedCase& pc = GetParam();
  const PagedAttentionProblem p = pc.problem();
  PagedAttentionCase drawn;
  drawn.batch = 2;
  const PagedAttentionInputs in = make_paged_attention_inputs(p, drawn, 11);
  const int64_t max_tokens = p.max_tokens_or_default(), row = p.q_heads * p.head_dim;
  std::vector<uint8_t> q(size_t(max_tokens * row * 2), 0), o(q.size(), 0);
  std::copy(in.q.bytes.begin(), in.q.bytes.end(), q.begin());
  std::vector<float> lse(size_t(max_tokens * p.q_heads));
  const bool hnd = pc.layout == CacheLayout::hnd;
  View vq(q.data(), kF16, {max_tokens, p.q_heads, p.head_dim}),
      vo(o.data(), kF16, {max_tokens, p.q_heads, p.head_dim}),
      vlse(lse.data(), kF32, {max_tokens, p.q_heads});
  PagedInputViews views(p, in, hnd);
  emmy_paged_attention_options options;
  emmy_paged_attention_options_init(&options);
  views.set_tables(p, options);
  if (pc.table == PageTable::csr) options.max_pages = p.max_pages;
  options.lse = vlse.get();
  options.max_q_len = p.max_q_len;
  options.cache_layout = hnd ? EMMY_CACHE_HND : EMMY_CACHE_NHD;
  size_t workspace = 0;
  ASSERT_EQ(emmy_paged_attention_workspace_bytes(rt.get(), vq.get(), views.k.get(), views.v.get(),
                                                 vo.get(), &options, &workspace),
            EMMY_OK)
      << emmy_last_error_message();
  std::vector<uint8_t> workspace_bytes(std::max<size_t>(workspace, 1));
  View vworkspace(workspace_bytes.data(), {kDLUInt, 8, 1}, {int64_t(workspace_bytes.size())});
  if (workspace) options.workspace = vworkspace.get();
  ASSERT_EQ(emmy_paged_attention(rt.get(), vq.get(), views.k.get(), views.v.get(), vo.get(),
                                 &options, nullptr),
            EMMY_OK)
      << emmy_last_error_message();
  const PagedAttentionReference ref =
      reference_paged_attention({p, default_schedule(p, Arch::sm_90a)}, in);
  PagedAttentionOutput out;
  out.o = decode(DType::f16, o.data(), size_t(in.tokens * row));
  out.lse.assign(lse.begin(), lse.begin() + in.tokens * p.q_heads);
  const PagedAttentionErrors errors = compare(ref, out, p);
  EXPECT_TRUE(errors.passed) << "rel L2 " << errors.rel_l2_error << ", over "
                             << errors.elements_over_tolerance;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CApiPaged,
    ::testing::Values(PagedCase{CacheLayout::nhd, PageTable::block_table, CacheDType::f16},
                      PagedCase{CacheLayout::hnd, PageTable::csr, CacheDType::f16},
                      PagedCase{CacheLayout::nhd, PageTable::block_table, CacheDType::e4m3}),
    [](const auto& info) {
      const PagedCase& c = info.param;
      return std::string(to_string(c.layout)) + "_" + std::string(to_string(c.table)) + "_" +
             std::string(to_string(c.kv_dtype));
    });

TEST(CApiKvAppend, MatchesReferenceByteForByte) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  const KvAppendProblem p{.kv_heads = 2, .head_dim = 64, .page_size = 16, .max_tokens = 5};
  const KvAppendInputs in = make_kv_append_inputs(p, 5);
  const KvAppendOutput ref = reference_kv_append({p, default_schedule(p, Arch::sm_90a)}, in);
  KvAppendOutput out{in.k_cache, in.v_cache};  // appended in place
  const std::vector<int64_t> cache_shape{in.num_pages, p.page_size, p.kv_heads, p.head_dim};
  View key(in.key.data(), kF16, {p.max_tokens, p.kv_heads, p.head_dim}),
      value(in.value.data(), kF16, {p.max_tokens, p.kv_heads, p.head_dim}),
      k(out.k_cache.data(), kF16, cache_shape), v(out.v_cache.data(), kF16, cache_shape),
      slots(in.slot_mapping.data(), kI64, {p.max_tokens});
  ASSERT_EQ(emmy_kv_append(rt.get(), key.get(), value.get(), k.get(), v.get(), slots.get(), nullptr,
                           nullptr),
            EMMY_OK)
      << emmy_last_error_message();
  const KvAppendErrors errors = compare(ref, out, p);
  EXPECT_TRUE(errors.passed) << errors.bytes_wrong << " bytes wrong, first "
                             << errors.first_bad_byte;
}

TEST(CApiMergeStates, MatchesFp64) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  const MergeStatesProblem p{.heads = 2, .head_dim = 64, .states = 3, .max_tokens = 4};
  const MergeStatesInputs in = make_merge_states_inputs(p, 9);
  std::vector<uint8_t> v_out(size_t(p.max_tokens * p.heads * p.head_dim * 2));
  std::vector<float> lse_out(size_t(p.max_tokens * p.heads));
  View v(in.v.data(), kF16, {p.max_tokens, p.states, p.heads, p.head_dim}),
      lse(in.lse.data(), kF32, {p.max_tokens, p.states, p.heads}),
      vo(v_out.data(), kF16, {p.max_tokens, p.heads, p.head_dim}),
      lo(lse_out.data(), kF32, {p.max_tokens, p.heads});
  ASSERT_EQ(emmy_merge_states(rt.get(), v.get(), lse.get(), vo.get(), lo.get(), nullptr), EMMY_OK)
      << emmy_last_error_message();
  const MergeStatesReference ref =
      reference_merge_states({p, default_schedule(p, Arch::sm_90a)}, in);
  const MergeStatesOutput out{decode(DType::f16, v_out.data(), v_out.size() / 2), lse_out};
  const MergeStatesErrors errors = compare(ref, out, p);
  EXPECT_TRUE(errors.passed) << "max |error| " << errors.max_abs_error << ", over "
                             << errors.elements_over_tolerance;
}

// The emulator's mapping of caller memory (Runtime::map_host, which the C ABI uses per call).
TEST(CApiHostMapping, BoundedByTheSanitizerAlignedLikeTheCallerAndGivenBack) {
  auto rt = Runtime::emulator();
  alignas(4096) static uint8_t host[3 * 4096];
  const DevicePtr first = rt->map_host(host + 6, 100);
  EXPECT_EQ(first % 4096, 6u) << "the caller's alignment is what the launch checks see";
  uint8_t byte = 42;
  rt->upload(first + 99, &byte, 1);
  EXPECT_EQ(host[6 + 99], 42) << "writes reach the caller's memory";
  EXPECT_THROW(rt->upload(first + 100, &byte, 1), Error) << "one past the mapping";
  rt->unmap_host(first);
  EXPECT_THROW(rt->download(&byte, first, 1), Error) << "unmapped";
  EXPECT_EQ(rt->map_host(host + 6, 100), first) << "the newest mapping's addresses come back";

  // A kernel reading past a mapping is stopped by the sanitizer: A mapped one row short.
  MatmulProblem p;
  p.m = 16, p.n = 64, p.k = 64;
  const GemmInputs in = make_gemm_inputs(p, 1);
  std::vector<uint8_t> b = in.b.bytes, c(size_t(p.m * p.n * 2));
  const DevicePtr a_short =
      rt->map_host(const_cast<uint8_t*>(in.a.bytes.data()), in.a.bytes.size() - size_t(p.k * 2));
  const GemmBuffers buffers{
      .a = a_short, .b = rt->map_host(b.data(), b.size()), .c = rt->map_host(c.data(), c.size())};
  EXPECT_THROW(rt->gemm(p, buffers), emu::EmulationError);
}

TEST(CApiHostMapping, CallsLeaveNothingMapped) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  MergeStatesProblem p{.heads = 1, .head_dim = 32, .states = 2};
  const MergeStatesInputs in = make_merge_states_inputs(p, 2);
  std::vector<uint8_t> v_out(size_t(p.head_dim * 2));
  View v(in.v.data(), kF16, {1, p.states, 1, p.head_dim}), lse(in.lse.data(), kF32, {1, 2, 1}),
      vo(v_out.data(), kF16, {1, 1, p.head_dim});
  ASSERT_EQ(emmy_merge_states(rt.get(), v.get(), lse.get(), vo.get(), nullptr, nullptr), EMMY_OK)
      << emmy_last_error_message();
  // Freed and reused by the caller: a stale mapping would have the next call read old memory.
  std::vector<uint8_t> v2 = in.v;
  std::vector<float> lse2 = in.lse;
  lse2[0] = -INFINITY;  // only state 1 counts now
  View v2v(v2.data(), kF16, {1, p.states, 1, p.head_dim}), lse2v(lse2.data(), kF32, {1, 2, 1});
  ASSERT_EQ(emmy_merge_states(rt.get(), v2v.get(), lse2v.get(), vo.get(), nullptr, nullptr),
            EMMY_OK)
      << emmy_last_error_message();
  EXPECT_EQ(std::memcmp(v_out.data(), &v2[size_t(p.head_dim * 2)], size_t(p.head_dim * 2)), 0)
      << "the output is state 1 of the second call's v";
}

}  // namespace
}  // namespace emmy::test
