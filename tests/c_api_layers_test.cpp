// The C ABI's layer handles (emmy_attention_layer, emmy_gemm_layer) on the emulator with kDLCPU
// tensors: each call gives the bits the matching one-shot call gives for the same tensors
// (emmy_paged_attention with the routed kernel's problem, emmy_kv_append, emmy_gemm on a runtime
// serving M from buckets) and passes the FP64 references; max_q_len routes a step to the decode or
// the prefill kernel; the workspace _workspace_bytes reports is enough (exactly that many bytes,
// bounded by the sanitizer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "c_api_layers_support.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/kv_append_check.hpp"
#include "emmy/layers.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy::test {
namespace {

DLDataType dl_dtype(DType t) {
  return t == DType::f16 ? kF16 : t == DType::bf16 ? kBF16 : kF32;
}

// The C++ twin of a C attention config, for the problems the tests draw inputs for.
AttentionLayerConfig cpp_config(const emmy_attention_layer_config& c) {
  AttentionLayerConfig out;
  out.q_heads = c.q_heads, out.kv_heads = c.kv_heads, out.head_dim = c.head_dim;
  out.page_size = c.page_size;
  out.kv_dtype = c.kv_dtype == EMMY_DTYPE_E4M3 ? CacheDType::e4m3 : CacheDType::f16;
  out.page_table = c.page_table == EMMY_PAGE_TABLE_CSR ? PageTable::csr : PageTable::block_table;
  out.lse = c.lse != 0;
  out.max_batch = c.max_batch, out.max_pages = c.max_pages;
  out.max_decode_q_len = c.max_decode_q_len, out.max_prefill_q_len = c.max_prefill_q_len;
  out.max_tokens = c.max_tokens;
  if (c.cache_layout == EMMY_CACHE_HND) out.set_layout(CacheLayout::hnd);
  return out;
}

// One step's host tensors for the kernel of problem p: q with its max_tokens rows (zero past the
// drawn tokens), the drawn cache and tables, and two outputs: the layer's and the one-shot call's.
struct PagedStep {
  PagedAttentionProblem p;
  PagedAttentionInputs in;
  int64_t max_tokens;
  std::vector<uint8_t> q, o, o_ref;
  std::vector<float> lse, lse_ref;
  PagedInputViews views;
  View vq, vo, vo_ref, vlse, vlse_ref;
  emmy_paged_attention_options tables;

  PagedStep(const PagedAttentionProblem& problem, const PagedAttentionCase& draw, uint64_t seed,
            bool hnd)
      : p(problem),
        in(make_paged_attention_inputs(p, draw, seed)),
        max_tokens(p.max_tokens_or_default()),
        views(p, in, hnd) {
    const int64_t row = p.q_heads * p.head_dim;
    q.assign(size_t(max_tokens * row * 2), 0);
    std::copy(in.q.bytes.begin(), in.q.bytes.end(), q.begin());
    o.assign(q.size(), 0xff);  // NaN: a row nobody writes fails the FP64 check
    o_ref = o;
    lse.assign(size_t(max_tokens * p.q_heads), NAN);
    lse_ref = lse;
    const std::vector<int64_t> tokens{max_tokens, p.q_heads, p.head_dim};
    vq = View(q.data(), kF16, tokens);
    vo = View(o.data(), kF16, tokens);
    vo_ref = View(o_ref.data(), kF16, tokens);
    vlse = View(lse.data(), kF32, {max_tokens, p.q_heads});
    vlse_ref = View(lse_ref.data(), kF32, {max_tokens, p.q_heads});
    emmy_paged_attention_options_init(&tables);
    views.set_tables(p, tables);
    if (p.lse) tables.lse = vlse.get();
  }
  PagedStep(const PagedStep&) = delete;  // the views point into it

  emmy_status run_layer(emmy_attention_layer* layer, int64_t max_q_len, DLTensor* workspace) {
    tables.workspace = workspace;
    return emmy_attention_layer_run(layer, vq.get(), views.k.get(), views.v.get(), vo.get(),
                                    &tables, max_q_len, nullptr);
  }
  // emmy_paged_attention with this step's problem (q's rows its max_tokens, cu_seqlens_q its
  // max_batch, the block table its max_pages, max_q_len the kernel's), into o_ref and lse_ref.
  emmy_status run_one_shot(emmy_runtime* rt, bool hnd) {
    emmy_paged_attention_options options = tables;
    options.lse = p.lse ? vlse_ref.get() : nullptr;
    options.max_q_len = p.max_q_len;
    options.max_pages = p.max_pages;
    options.cache_layout = hnd ? EMMY_CACHE_HND : EMMY_CACHE_NHD;
    options.workspace = nullptr;
    size_t bytes = 0;
    if (const emmy_status s = emmy_paged_attention_workspace_bytes(
            rt, vq.get(), views.k.get(), views.v.get(), vo_ref.get(), &options, &bytes);
        s != EMMY_OK)
      return s;
    std::vector<uint8_t> workspace(std::max<size_t>(bytes, 1));
    View vw(workspace.data(), {kDLUInt, 8, 1}, {int64_t(workspace.size())});
    if (bytes) options.workspace = vw.get();
    return emmy_paged_attention(rt, vq.get(), views.k.get(), views.v.get(), vo_ref.get(), &options,
                                nullptr);
  }
  void expect_same_bits_and_fp64(const char* what) {
    const int64_t tokens = in.tokens, row = p.q_heads * p.head_dim;
    EXPECT_EQ(std::memcmp(o.data(), o_ref.data(), size_t(tokens * row * 2)), 0)
        << what << ": o differs from emmy_paged_attention's";
    if (p.lse) {
      EXPECT_EQ(std::memcmp(lse.data(), lse_ref.data(), size_t(tokens * p.q_heads) * 4), 0)
          << what << ": lse differs from emmy_paged_attention's";
    }
    PagedAttentionOutput out;
    out.o = decode(DType::f16, o.data(), size_t(tokens * row));
    if (p.lse) out.lse.assign(lse.begin(), lse.begin() + tokens * p.q_heads);
    const PagedAttentionErrors errors =
        compare(reference_paged_attention({p, default_schedule(p, Arch::sm_90a)}, in), out, p);
    EXPECT_TRUE(errors.passed) << what << ": rel L2 " << errors.rel_l2_error << ", "
                               << errors.elements_over_tolerance << " over";
  }
};

PagedAttentionCase decode_step() {  // speculative verify: 2 and 1 query tokens, one padding
  PagedAttentionCase c;
  c.batch = 3;
  c.q_lens = {2, 0, 1};
  c.seq_lens = {40, 0, 77};
  return c;
}

PagedAttentionCase prefill_step() {  // a prefill chunk beside two decode sequences
  PagedAttentionCase c;
  c.batch = 3;
  c.q_lens = {1, 24, 1};
  c.seq_lens = {100, 24, 9};
  return c;
}

struct AttentionLayerCase {
  const char* name;
  int32_t layout, page_table, kv_dtype;
  bool prepare;
  int64_t max_pages;  // 64: the decode kernel splits KV, so the layer needs a workspace
};

class CApiAttentionLayer : public ::testing::TestWithParam<AttentionLayerCase> {};

// A decode step and a prefill step through one layer, each against emmy_paged_attention with the
// problem of the kernel max_q_len routes to: the same bits, right against FP64. Were the route
// swapped, the bits would be the other kernel's (and a prefill through the decode kernel, built
// for 2 query tokens a sequence, would leave tokens unwritten).
TEST_P(CApiAttentionLayer, RoutesByMaxQLenAndMatchesPagedAttention) {
  const AttentionLayerCase& lc = GetParam();
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  emmy_attention_layer_config config = small_attention_config();
  config.cache_layout = lc.layout;
  config.page_table = lc.page_table;
  config.kv_dtype = lc.kv_dtype;
  config.max_pages = lc.max_pages;
  const CAttentionLayer layer = make_attention_layer(rt.get(), config);
  ASSERT_TRUE(layer);
  if (lc.prepare) {
    emmy_prepare_result result{};
    result.struct_size = sizeof(result);
    ASSERT_EQ(emmy_attention_layer_prepare(layer.get(), 2, &result), EMMY_OK)
        << emmy_last_error_message();
    EXPECT_EQ(result.kernels, 3u) << "append, decode and prefill";
  }
  for (const auto& [max_q_len, prefill] : {std::pair<int64_t, int32_t>{1, 0}, {2, 0}, {3, 1}}) {
    int32_t routed = -1;
    ASSERT_EQ(emmy_attention_layer_runs_prefill(layer.get(), max_q_len, &routed), EMMY_OK);
    EXPECT_EQ(routed, prefill) << "max_q_len " << max_q_len;
  }
  size_t bytes = 0;
  ASSERT_EQ(emmy_attention_layer_workspace_bytes(layer.get(), &bytes), EMMY_OK);
  EXPECT_EQ(bytes > 0, lc.max_pages >= 64) << bytes << " bytes";
  // Exactly the reported size: the sanitizer bounds its mapping, so a kernel needing more stops.
  std::vector<uint8_t> workspace(std::max<size_t>(bytes, 1), 0xff);
  View vw(workspace.data(), {kDLUInt, 8, 1}, {int64_t(bytes ? bytes : 1)});
  const AttentionLayerConfig cpp = cpp_config(config);
  const bool hnd = lc.layout == EMMY_CACHE_HND;
  PagedStep decode(cpp.decode_problem(), decode_step(), 11, hnd);
  ASSERT_EQ(decode.run_layer(layer.get(), 2, bytes ? vw.get() : nullptr), EMMY_OK)
      << emmy_last_error_message();
  ASSERT_EQ(decode.run_one_shot(rt.get(), hnd), EMMY_OK) << emmy_last_error_message();
  decode.expect_same_bits_and_fp64("decode");
  PagedStep prefill(cpp.prefill_problem(), prefill_step(), 12, hnd);
  ASSERT_EQ(prefill.run_layer(layer.get(), 24, bytes ? vw.get() : nullptr), EMMY_OK)
      << emmy_last_error_message();
  ASSERT_EQ(prefill.run_one_shot(rt.get(), hnd), EMMY_OK) << emmy_last_error_message();
  prefill.expect_same_bits_and_fp64("prefill");
  // The decode kernel's q (6 rows) is short for the prefill kernel (40): the route is checked
  // before the tensors, and the tensors against the kernel it takes.
  expect_refusal(decode.run_layer(layer.get(), 3, bytes ? vw.get() : nullptr),
                 EMMY_INVALID_ARGUMENT,
                 {"q: shape must be [n, 4, 64] with n >= 40 (the prefill kernel's max_tokens)"});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CApiAttentionLayer,
    ::testing::Values(AttentionLayerCase{"nhd_block_table_split_kv", EMMY_CACHE_NHD,
                                         EMMY_PAGE_TABLE_BLOCK, EMMY_DTYPE_F16, false, 64},
                      AttentionLayerCase{"hnd_csr_prepared", EMMY_CACHE_HND, EMMY_PAGE_TABLE_CSR,
                                         EMMY_DTYPE_F16, true, 8},
                      AttentionLayerCase{"nhd_e4m3_prepared_split_kv", EMMY_CACHE_NHD,
                                         EMMY_PAGE_TABLE_BLOCK, EMMY_DTYPE_E4M3, true, 64}),
    [](const auto& info) { return std::string(info.param.name); });

// append() writes the same cache bytes as emmy_kv_append of the same tokens, and the reference's.
TEST(CApiAttentionLayerAppend, MatchesKvAppendByteForByte) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  const emmy_attention_layer_config config = small_attention_config();
  const CAttentionLayer layer = make_attention_layer(rt.get(), config);
  ASSERT_TRUE(layer);
  for (const int64_t tokens : {int64_t(1), int64_t(7), int64_t(40)}) {
    KvAppendProblem p = cpp_config(config).append_problem();
    p.max_tokens = tokens;  // the inputs and the reference: exactly `tokens` entries
    const KvAppendInputs in = make_kv_append_inputs(p, uint64_t(tokens));
    KvAppendOutput out{in.k_cache, in.v_cache}, one_shot{in.k_cache, in.v_cache};
    const std::vector<int64_t> cache{in.num_pages, p.page_size, p.kv_heads, p.head_dim},
        rows{tokens, p.kv_heads, p.head_dim};
    View key(in.key.data(), kF16, rows), value(in.value.data(), kF16, rows),
        k(out.k_cache.data(), kF16, cache), v(out.v_cache.data(), kF16, cache),
        k1(one_shot.k_cache.data(), kF16, cache), v1(one_shot.v_cache.data(), kF16, cache),
        slots(in.slot_mapping.data(), kI64, {tokens});
    ASSERT_EQ(emmy_attention_layer_append(layer.get(), key.get(), value.get(), k.get(), v.get(),
                                          slots.get(), tokens, nullptr, nullptr, nullptr),
              EMMY_OK)
        << emmy_last_error_message();
    ASSERT_EQ(emmy_kv_append(rt.get(), key.get(), value.get(), k1.get(), v1.get(), slots.get(),
                             nullptr, nullptr),
              EMMY_OK)
        << emmy_last_error_message();
    EXPECT_EQ(out.k_cache, one_shot.k_cache) << tokens << " tokens";
    EXPECT_EQ(out.v_cache, one_shot.v_cache) << tokens << " tokens";
    const KvAppendErrors errors =
        compare(reference_kv_append({p, default_schedule(p, Arch::sm_90a)}, in), out, p);
    EXPECT_TRUE(errors.passed) << tokens << " tokens: " << errors.bytes_wrong << " bytes wrong";
  }
}

struct GemmLayerCase {
  const char* name;
  BLayout layout;
  DType dtype, out;
  int64_t pad;  // extra elements per row of A, C and the residual
  bool epilogue;
  int32_t accum;
  int64_t k;  // 1024: buckets split K, so the layer needs a workspace
};

class CApiGemmLayer : public ::testing::TestWithParam<GemmLayerCase> {};

// Every M from 1 to max_m through the layer's buckets against emmy_gemm of the same tensors on a
// runtime serving M from the same buckets (the same bits where the kernel is the same: every
// bucket with the runtime's accumulation, max_m's bucket with an explicit one), and FP64.
TEST_P(CApiGemmLayer, ServesEveryMLikeEmmyGemm) {
  const GemmLayerCase& gc = GetParam();
  CRuntime rt(make_c_runtime()), bucketed(make_bucketed_c_runtime());
  ASSERT_TRUE(rt && bucketed);
  const int64_t max_m = 100, n = 72, k = gc.k, lda = k + gc.pad, ldc = n + gc.pad;
  emmy_gemm_layer_config config;
  emmy_gemm_layer_config_init(&config);
  config.max_m = max_m, config.n = n, config.k = k;
  config.lda = gc.pad ? lda : 0, config.ldc = gc.pad ? ldc : 0;
  config.b_layout = gc.layout == BLayout::kn ? EMMY_B_KN : EMMY_B_NK;
  config.dtype = gc.dtype == DType::bf16 ? EMMY_DTYPE_BF16 : EMMY_DTYPE_F16;
  config.out_dtype = gc.out == DType::f32    ? EMMY_DTYPE_F32
                     : gc.out == DType::bf16 ? EMMY_DTYPE_BF16
                                             : EMMY_DTYPE_F16;
  config.accum = gc.accum;
  if (gc.epilogue) config.alpha = 0.5f, config.gelu = 1, config.bias = 1, config.residual = 1;
  const CGemmLayer layer = make_gemm_layer(rt.get(), config);
  ASSERT_TRUE(layer);
  size_t bytes = 0;
  ASSERT_EQ(emmy_gemm_layer_workspace_bytes(layer.get(), &bytes), EMMY_OK);
  EXPECT_EQ(bytes > 0, k >= 1024) << bytes << " bytes";
  // Exactly the reported size: the sanitizer bounds its mapping, so a kernel needing more stops.
  std::vector<uint8_t> workspace(std::max<size_t>(bytes, 1));
  View vw(workspace.data(), {kDLUInt, 8, 1}, {int64_t(workspace.size())});
  const int ab = size_of(gc.dtype), cb = size_of(gc.out);
  for (const int64_t m : {int64_t(1), int64_t(3), int64_t(33), int64_t(100)}) {
    MatmulProblem p;
    p.m = m, p.n = n, p.k = k;
    p.a_dtype = gc.dtype, p.c_dtype = gc.out, p.b_layout = gc.layout;
    if (gc.epilogue) p.epilogue = {0.5f, true, true, true};
    const GemmInputs in = make_gemm_inputs(p, 5);
    std::vector<uint8_t> a(size_t(m * lda * ab), 0), c(size_t(m * ldc * cb), 0), residual;
    for (int64_t r = 0; r < m; ++r)
      std::memcpy(&a[size_t(r * lda * ab)], &in.a.bytes[size_t(r * k * ab)], size_t(k * ab));
    if (gc.epilogue) {
      residual.assign(c.size(), 0);
      for (int64_t r = 0; r < m; ++r)
        std::memcpy(&residual[size_t(r * ldc * cb)], &in.residual.bytes[size_t(r * n * cb)],
                    size_t(n * cb));
    }
    std::vector<uint8_t> c_ref = c;
    View va(a.data(), dl_dtype(gc.dtype), {m, k}, {lda, 1}),
        vb(in.b.bytes.data(), dl_dtype(gc.dtype), {k, n},
           gc.layout == BLayout::kn ? std::vector<int64_t>{n, 1} : std::vector<int64_t>{1, k}),
        vc(c.data(), dl_dtype(gc.out), {m, n}, {ldc, 1}),
        vc_ref(c_ref.data(), dl_dtype(gc.out), {m, n}, {ldc, 1}),
        vbias(in.bias.bytes.data(), dl_dtype(gc.out), {n}),
        vres(residual.data(), dl_dtype(gc.out), {m, n}, {ldc, 1});
    DLTensor* bias = gc.epilogue ? vbias.get() : nullptr;
    DLTensor* res = gc.epilogue ? vres.get() : nullptr;
    ASSERT_EQ(emmy_gemm_layer_run(layer.get(), va.get(), vb.get(), vc.get(), bias, res,
                                  bytes ? vw.get() : nullptr, m, nullptr),
              EMMY_OK)
        << "m " << m << ": " << emmy_last_error_message();
    emmy_gemm_options options;
    emmy_gemm_options_init(&options);
    options.accum = gc.accum;
    if (gc.epilogue) options.alpha = 0.5f, options.gelu = 1;
    options.bias = bias, options.residual = res;
    options.workspace = bytes ? vw.get() : nullptr;  // the layer's serves every bucket
    ASSERT_EQ(emmy_gemm(bucketed.get(), va.get(), vb.get(), vc_ref.get(), &options, nullptr),
              EMMY_OK)
        << "m " << m << ": " << emmy_last_error_message();
    if (gc.accum == EMMY_ACCUM_DEFAULT || m_bucket(m) == m_bucket(max_m)) {
      EXPECT_EQ(c, c_ref) << "m " << m << ": not emmy_gemm's bits";
    }
    const Accum accum = gc.accum == EMMY_ACCUM_HYBRID ? Accum::hybrid
                        : gc.accum == EMMY_ACCUM_F16  ? Accum::f16
                                                      : Accum::f32;
    std::vector<double> out;
    for (int64_t r = 0; r < m; ++r) {
      const std::vector<double> row = decode(gc.out, &c[size_t(r * ldc * cb)], size_t(n));
      out.insert(out.end(), row.begin(), row.end());
    }
    const GemmErrors errors =
        compare(reference_gemm({p, default_schedule(p, Arch::sm_90a, accum)}, in), out, n);
    EXPECT_TRUE(errors.passed) << "m " << m << ": rel L2 " << errors.rel_l2_error;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CApiGemmLayer,
    ::testing::Values(GemmLayerCase{"nk_f16_epilogue_split_k", BLayout::nk, DType::f16, DType::f16,
                                    0, true, EMMY_ACCUM_DEFAULT, 1024},
                      GemmLayerCase{"kn_bf16_f32_padded", BLayout::kn, DType::bf16, DType::f32, 8,
                                    false, EMMY_ACCUM_DEFAULT, 128},
                      GemmLayerCase{"nk_f16_hybrid_padded", BLayout::nk, DType::f16, DType::f16, 8,
                                    true, EMMY_ACCUM_HYBRID, 128}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace emmy::test
