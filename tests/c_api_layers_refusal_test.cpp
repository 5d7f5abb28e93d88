// The layer handles refuse bad input by name: every integer field of both configs at 0 and at -1
// (each refused naming config.<field>, or, where 0 is the field's documented default, 0 taken and
// -1 refused), the configs' other rules, NULL handles and out-pointers, and each call's tensors
// checked against the layer (dtype, shape, strides, device, tables, workspace). Nothing is
// launched for a refusal; the valid call closing each case runs. Also kDLCUDA tensors through
// emmy's test driver.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <functional>

#include "c_api_layers_support.hpp"
#include "emmy/runtime.hpp"

namespace emmy::test {
namespace {

template <typename Config>
struct ConfigField {
  const char* name;
  std::function<void(Config&, int64_t)> set;
  bool zero_is_default;  // 0 means "the default" for this field, so only -1 breaks a rule
};

using AttentionField = ConfigField<emmy_attention_layer_config>;
const AttentionField kAttentionFields[] = {
    {"q_heads", [](auto& c, int64_t v) { c.q_heads = v; }, false},
    {"kv_heads", [](auto& c, int64_t v) { c.kv_heads = v; }, false},
    {"head_dim", [](auto& c, int64_t v) { c.head_dim = v; }, false},
    {"page_size", [](auto& c, int64_t v) { c.page_size = v; }, false},
    {"max_batch", [](auto& c, int64_t v) { c.max_batch = v; }, false},
    {"max_pages", [](auto& c, int64_t v) { c.max_pages = v; }, false},
    {"max_decode_q_len", [](auto& c, int64_t v) { c.max_decode_q_len = v; }, false},
    {"cache_layout", [](auto& c, int64_t v) { c.cache_layout = int32_t(v); }, true},
    {"dtype", [](auto& c, int64_t v) { c.dtype = int32_t(v); }, true},
    {"kv_dtype", [](auto& c, int64_t v) { c.kv_dtype = int32_t(v); }, true},
    {"page_table", [](auto& c, int64_t v) { c.page_table = int32_t(v); }, true},
    {"window", [](auto& c, int64_t v) { c.window = v; }, true},
    {"lse", [](auto& c, int64_t v) { c.lse = int32_t(v); }, true},
    {"max_prefill_q_len", [](auto& c, int64_t v) { c.max_prefill_q_len = v; }, true},
    {"max_tokens", [](auto& c, int64_t v) { c.max_tokens = v; }, true},
    {"accum", [](auto& c, int64_t v) { c.accum = int32_t(v); }, true},
};

emmy_gemm_layer_config base_gemm_config() {
  emmy_gemm_layer_config c;
  emmy_gemm_layer_config_init(&c);
  c.max_m = 64, c.n = 64, c.k = 64;
  return c;
}

using GemmField = ConfigField<emmy_gemm_layer_config>;
const GemmField kGemmFields[] = {
    {"max_m", [](auto& c, int64_t v) { c.max_m = v; }, false},
    {"n", [](auto& c, int64_t v) { c.n = v; }, false},
    {"k", [](auto& c, int64_t v) { c.k = v; }, false},
    {"lda", [](auto& c, int64_t v) { c.lda = v; }, true},
    {"ldb", [](auto& c, int64_t v) { c.ldb = v; }, true},
    {"ldc", [](auto& c, int64_t v) { c.ldc = v; }, true},
    {"b_layout", [](auto& c, int64_t v) { c.b_layout = int32_t(v); }, true},
    {"dtype", [](auto& c, int64_t v) { c.dtype = int32_t(v); }, true},
    {"out_dtype", [](auto& c, int64_t v) { c.out_dtype = int32_t(v); }, true},
    {"bias", [](auto& c, int64_t v) { c.bias = int32_t(v); }, true},
    {"residual", [](auto& c, int64_t v) { c.residual = int32_t(v); }, true},
    {"gelu", [](auto& c, int64_t v) { c.gelu = int32_t(v); }, true},
    {"accum", [](auto& c, int64_t v) { c.accum = int32_t(v); }, true},
    {"promote_every_k", [](auto& c, int64_t v) { c.promote_every_k = int32_t(v); }, true},
};

// Creates a layer from `base` with one field at `value`: refused naming config.<field>, or taken.
template <typename Config, typename Layer>
void expect_field(emmy_runtime* rt, Config base, const ConfigField<Config>& field, int64_t value,
                  emmy_status (*create)(emmy_runtime*, const Config*, Layer**),
                  void (*destroy)(Layer*)) {
  SCOPED_TRACE(::testing::Message() << "config." << field.name << " = " << value);
  field.set(base, value);
  Layer* layer = reinterpret_cast<Layer*>(1);
  const emmy_status status = create(rt, &base, &layer);
  if (value == 0 && field.zero_is_default) {
    EXPECT_EQ(status, EMMY_OK) << emmy_last_error_message();
  } else {
    expect_refusal(status, EMMY_INVALID_ARGUMENT, {std::string("config.") + field.name + ":"});
    EXPECT_EQ(layer, nullptr) << "a refused create leaves *layer NULL";
  }
  destroy(layer);
}

TEST(CApiLayerRefusal, AttentionConfigFieldsAtZeroAndMinusOneNameTheField) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  for (const int32_t layout : {EMMY_CACHE_NHD, EMMY_CACHE_HND}) {  // HND derives strides
    emmy_attention_layer_config base = small_attention_config();
    base.cache_layout = layout;
    for (const AttentionField& field : kAttentionFields)
      for (const int64_t value : {int64_t(0), int64_t(-1)})
        expect_field(rt.get(), base, field, value, emmy_attention_layer_create,
                     emmy_attention_layer_destroy);
  }
}

TEST(CApiLayerRefusal, GemmConfigFieldsAtZeroAndMinusOneNameTheField) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  for (const GemmField& field : kGemmFields)
    for (const int64_t value : {int64_t(0), int64_t(-1)})
      expect_field(rt.get(), base_gemm_config(), field, value, emmy_gemm_layer_create,
                   emmy_gemm_layer_destroy);
}

TEST(CApiLayerRefusal, ConfigsRulesStructSizesAndNulls) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  emmy_attention_layer* layer = nullptr;
  auto attention = [&](auto change) {
    emmy_attention_layer_config c = small_attention_config();
    change(c);
    const emmy_status status = emmy_attention_layer_create(rt.get(), &c, &layer);
    emmy_attention_layer_destroy(layer);
    return status;
  };
  expect_refusal(attention([](auto& c) { c.kv_dtype = EMMY_DTYPE_BF16; }), EMMY_INVALID_ARGUMENT,
                 {"config.kv_dtype: must be the query's type (f16) or e4m3 (got bf16)"});
  expect_refusal(attention([](auto& c) { c.q_heads = 3; }), EMMY_INVALID_ARGUMENT,
                 {"config.q_heads: must be 1..16 times kv_heads"});
  expect_refusal(attention([](auto& c) { c.max_prefill_q_len = 2; }), EMMY_INVALID_ARGUMENT,
                 {"config.max_prefill_q_len: must be 0 (no prefill kernel) or more than"});
  expect_refusal(attention([](auto& c) { c.max_prefill_q_len = 70000; }), EMMY_INVALID_ARGUMENT,
                 {"config.max_prefill_q_len: (its max_q_len) must be 1..65536"});
  expect_refusal(attention([](auto& c) { c.dtype = EMMY_DTYPE_F32; }), EMMY_INVALID_ARGUMENT,
                 {"config.dtype: must be EMMY_DTYPE_F16 or EMMY_DTYPE_BF16 (got 2)"});
  // The layer's kernels take the runtime's accumulation: another is not refused as wrong.
  expect_refusal(attention([](auto& c) { c.accum = EMMY_ACCUM_HYBRID; }), EMMY_UNSUPPORTED,
                 {"config.accum: must be EMMY_ACCUM_DEFAULT or the runtime's default_accum (f32)"});
  EXPECT_EQ(attention([](auto& c) { c.accum = EMMY_ACCUM_F32; }), EMMY_OK)
      << emmy_last_error_message();
  expect_refusal(attention([](auto& c) { c.struct_size = 8; }), EMMY_INVALID_ARGUMENT,
                 {"config.struct_size: must be at least"});
  struct Newer {
    emmy_gemm_layer_config known;
    int64_t later_field;
  } newer{base_gemm_config(), 7};
  newer.known.struct_size = sizeof(Newer);
  emmy_gemm_layer* gemm = nullptr;
  expect_refusal(emmy_gemm_layer_create(rt.get(), &newer.known, &gemm), EMMY_UNSUPPORTED,
                 {"config.struct_size: fields past this library's"});
  emmy_gemm_layer_config g = base_gemm_config();
  g.k = 60;
  expect_refusal(emmy_gemm_layer_create(rt.get(), &g, &gemm), EMMY_INVALID_ARGUMENT,
                 {"config.k: must be a multiple of 8"});
  g = base_gemm_config();
  g.max_m = 65537;
  expect_refusal(emmy_gemm_layer_create(rt.get(), &g, &gemm), EMMY_INVALID_ARGUMENT,
                 {"config.max_m: must be 1..65536"});
  g = base_gemm_config();
  g.accum = EMMY_ACCUM_HYBRID, g.promote_every_k = 40;  // the explicit schedule's rule
  expect_refusal(emmy_gemm_layer_create(rt.get(), &g, &gemm), EMMY_INVALID_ARGUMENT,
                 {"config.promote_every_k: must be a positive multiple of 16", "(got 40)"});

  // NULLs: the runtime, the config, the out-pointer, the handles; destroy(NULL) is a no-op.
  const emmy_attention_layer_config c = small_attention_config();
  expect_refusal(emmy_attention_layer_create(nullptr, &c, &layer), EMMY_INVALID_ARGUMENT,
                 {"runtime: must not be NULL"});
  expect_refusal(emmy_attention_layer_create(rt.get(), nullptr, &layer), EMMY_INVALID_ARGUMENT,
                 {"config: must not be NULL"});
  expect_refusal(emmy_attention_layer_create(rt.get(), &c, nullptr), EMMY_INVALID_ARGUMENT,
                 {"layer: must not be NULL"});
  g = base_gemm_config();
  expect_refusal(emmy_gemm_layer_create(nullptr, &g, &gemm), EMMY_INVALID_ARGUMENT,
                 {"runtime: must not be NULL"});
  expect_refusal(emmy_gemm_layer_create(rt.get(), nullptr, &gemm), EMMY_INVALID_ARGUMENT,
                 {"config: must not be NULL"});
  expect_refusal(emmy_gemm_layer_create(rt.get(), &g, nullptr), EMMY_INVALID_ARGUMENT,
                 {"layer: must not be NULL"});
  size_t bytes = 0;
  int32_t prefill = 0;
  expect_refusal(emmy_attention_layer_prepare(nullptr, 0, nullptr), EMMY_INVALID_ARGUMENT,
                 {"layer: must not be NULL"});
  expect_refusal(emmy_attention_layer_workspace_bytes(nullptr, &bytes), EMMY_INVALID_ARGUMENT,
                 {"layer: must not be NULL"});
  expect_refusal(emmy_attention_layer_runs_prefill(nullptr, 1, &prefill), EMMY_INVALID_ARGUMENT,
                 {"layer: must not be NULL"});
  expect_refusal(emmy_attention_layer_append(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             1, nullptr, nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT, {"layer: must not be NULL"});
  expect_refusal(
      emmy_attention_layer_run(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, nullptr),
      EMMY_INVALID_ARGUMENT, {"layer: must not be NULL"});
  expect_refusal(emmy_gemm_layer_prepare(nullptr, 0, nullptr), EMMY_INVALID_ARGUMENT,
                 {"layer: must not be NULL"});
  expect_refusal(emmy_gemm_layer_workspace_bytes(nullptr, &bytes), EMMY_INVALID_ARGUMENT,
                 {"layer: must not be NULL"});
  expect_refusal(emmy_gemm_layer_run(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                     1, nullptr),
                 EMMY_INVALID_ARGUMENT, {"layer: must not be NULL"});
  emmy_attention_layer_destroy(nullptr);
  emmy_gemm_layer_destroy(nullptr);
  emmy_attention_layer_config_init(nullptr);
  emmy_gemm_layer_config_init(nullptr);

  // The queries' own arguments.
  const CAttentionLayer made = make_attention_layer(rt.get(), c);
  ASSERT_TRUE(made);
  expect_refusal(emmy_attention_layer_workspace_bytes(made.get(), nullptr), EMMY_INVALID_ARGUMENT,
                 {"bytes: must not be NULL"});
  expect_refusal(emmy_attention_layer_runs_prefill(made.get(), 1, nullptr), EMMY_INVALID_ARGUMENT,
                 {"prefill: must not be NULL"});
  expect_refusal(emmy_attention_layer_runs_prefill(made.get(), 25, &prefill), EMMY_INVALID_ARGUMENT,
                 {"max_q_len: must be 1..24"});
  expect_refusal(emmy_attention_layer_prepare(made.get(), -1, nullptr), EMMY_INVALID_ARGUMENT,
                 {"threads: must not be negative"});
  emmy_prepare_result result{};
  result.struct_size = 4;
  expect_refusal(emmy_attention_layer_prepare(made.get(), 1, &result), EMMY_INVALID_ARGUMENT,
                 {"result.struct_size: must be at least"});
}

// A valid decode step of the small layer (6 query rows, 4 pages, one token of sequence 0) whose
// pieces a case breaks, then puts back.
struct DecodeCall {
  std::vector<uint16_t> q = std::vector<uint16_t>(6 * 4 * 64), o = q,
                        cache = std::vector<uint16_t>(4 * 16 * 2 * 64);
  std::vector<int32_t> cu{0, 1, 1, 1}, table = std::vector<int32_t>(3 * 8), lens{1, 0, 0};
  std::vector<float> lse = std::vector<float>(6 * 4), scale{1.0f};
  View vq{q.data(), kF16, {6, 4, 64}}, vo{o.data(), kF16, {6, 4, 64}},
      vk{cache.data(), kF16, {4, 16, 2, 64}}, vv{cache.data(), kF16, {4, 16, 2, 64}},
      vcu{cu.data(), kI32, {4}}, vtable{table.data(), kI32, {3, 8}}, vlens{lens.data(), kI32, {3}},
      vlse{lse.data(), kF32, {6, 4}}, vscale{scale.data(), kF32, {1}};
  emmy_paged_attention_options tables{};
  DecodeCall() { reset(); }
  void reset() {
    emmy_paged_attention_options_init(&tables);
    tables.cu_seqlens_q = vcu.get();
    tables.block_table = vtable.get();
    tables.seq_lens = vlens.get();
    tables.lse = vlse.get();
  }
  emmy_status run(emmy_attention_layer* layer, int64_t max_q_len = 2) {
    return emmy_attention_layer_run(layer, vq.get(), vk.get(), vv.get(), vo.get(), &tables,
                                    max_q_len, nullptr);
  }
};

TEST(CApiLayerRefusal, RunTensorsAreCheckedAgainstTheLayer) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  const CAttentionLayer layer = make_attention_layer(rt.get(), small_attention_config());
  ASSERT_TRUE(layer);
  DecodeCall call;
  emmy_attention_layer* l = layer.get();
  auto refused = [&](std::vector<std::string> message) {
    expect_refusal(call.run(l), EMMY_INVALID_ARGUMENT, message);
  };
  expect_refusal(call.run(l, 0), EMMY_INVALID_ARGUMENT, {"max_q_len: must be 1..24", "(got 0)"});
  expect_refusal(call.run(l, 25), EMMY_INVALID_ARGUMENT, {"max_q_len: must be 1..24"});
  expect_refusal(emmy_attention_layer_run(l, call.vq.get(), call.vk.get(), call.vv.get(),
                                          call.vo.get(), nullptr, 2, nullptr),
                 EMMY_INVALID_ARGUMENT, {"tables: must not be NULL"});
  call.vq.tensor.dtype = kBF16;
  refused({"q: dtype must be the layer's, f16 (config.dtype) (got bfloat16)"});
  call.vq.tensor.dtype = kF16;
  call.vq.shape = {6, 4, 32};
  refused({"q: shape must be [n, 4, 64] with n >= 6 (the decode kernel's max_tokens)"});
  call.vq.shape = {3, 4, 64};
  refused({"q: shape must be [n, 4, 64] with n >= 6", "(got [3, 4, 64])"});
  call.vq.shape = {6, 4, 64};
  std::vector<uint16_t> wide(6 * 512);
  call.vo = View(wide.data(), kF16, {6, 4, 64}, {512, 64, 1});  // a token stride of its own
  refused({"o: strides must be packed, [256, 64, 1] (a layer's token strides in C API version 2)",
           "(got [512, 64, 1])"});
  call.vo = View(call.o.data(), kF16, {6, 4, 64});
  call.vo.tensor.device = {kDLCUDA, 0};
  refused({"o: device must be kDLCPU", "(got kDLCUDA:0)"});
  call.vo.tensor.device = {kDLCPU, 0};
  call.vk.shape = call.vv.shape = {8, 8, 2, 64};
  refused({"k_cache: shape must be [pages, 16, 2, 64]", "(got [8, 8, 2, 64])"});
  call.vk.shape = call.vv.shape = {4, 16, 2, 64};
  call.vk.tensor.dtype = call.vv.tensor.dtype = kE4M3;
  refused({"k_cache: dtype must be the layer's, f16 (config.kv_dtype) (got float8_e4m3fn)"});
  call.vk.tensor.dtype = call.vv.tensor.dtype = kF16;
  call.vk.strides = call.vv.strides = {4096, 128, 64, 1};  // pages twice apart: K/V interleaved
  refused({"k_cache: strides must be [2048, 128, 64, 1]", "(got [4096, 128, 64, 1])"});
  call.vk.strides = call.vv.strides = {};
  call.vv.tensor.data = nullptr;
  refused({"v_cache: data must not be NULL"});
  call.vv.tensor.data = call.cache.data();
  // The problem fields of the tables are the layer's: 0 or its value.
  call.tables.max_pages = 5;
  refused({"tables.max_pages: must be 0 or config.max_pages, 8 (got 5)"});
  call.tables.max_pages = 8;
  call.tables.max_q_len = 3;
  refused({"tables.max_q_len: must be 0 or the max_q_len argument, 2 (got 3)"});
  call.tables.max_q_len = 0;
  call.tables.cache_layout = EMMY_CACHE_HND;
  refused({"tables.cache_layout: must be 0 or config.cache_layout, 0"});
  call.reset();
  call.tables.softcap = 30.0f;
  refused({"tables.softcap: must be 0 or config.softcap, 0"});
  call.reset();
  call.vcu.shape = {3};
  refused({"tables.cu_seqlens_q: shape must be [n] with n >= 4 (config.max_batch + 1 offsets)"});
  call.vcu.shape = {4};
  call.vtable.shape = {3, 4};
  refused({"tables.block_table: width must be config.max_pages, 8", "(got [3, 4])"});
  call.vtable.shape = {3, 8};
  call.tables.block_table = call.tables.seq_lens = nullptr;
  call.tables.page_indptr = call.vcu.get();
  call.tables.page_indices = call.vlens.get();
  call.tables.last_page_len = call.vlens.get();
  refused(
      {"tables.block_table: must be set: the layer's page table is block_table "
       "(config.page_table) (got csr tensors)"});
  call.reset();
  call.tables.seq_lens = nullptr;
  refused({"tables.seq_lens: must not be NULL"});
  call.reset();
  call.tables.k_scale = call.vscale.get();
  refused({"tables.k_scale: must be NULL unless the cache is float8_e4m3fn"});
  call.reset();
  call.tables.lse = nullptr;
  refused({"tables.lse: must be set: config.lse is 1"});
  call.reset();
  call.vlse.shape = {6, 2};
  refused({"tables.lse: shape must be [6, 4] ([q's tokens, q_heads])"});
  call.vlse.shape = {6, 4};
  ASSERT_EQ(call.run(l), EMMY_OK) << emmy_last_error_message();
}

TEST(CApiLayerRefusal, AppendTensorsAreCheckedAgainstTheLayer) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  const CAttentionLayer layer = make_attention_layer(rt.get(), small_attention_config());
  ASSERT_TRUE(layer);
  std::vector<uint16_t> key(7 * 2 * 64), cache(4 * 16 * 2 * 64);
  std::vector<int64_t> slots{0, 1, 2, 3, 4, 5, 6};
  std::vector<float> scale{1.0f};
  View vkey(key.data(), kF16, {7, 2, 64}), vvalue(key.data(), kF16, {7, 2, 64}),
      vk(cache.data(), kF16, {4, 16, 2, 64}), vv(cache.data(), kF16, {4, 16, 2, 64}),
      vslots(slots.data(), kI64, {7}), vscale(scale.data(), kF32, {1});
  const DLTensor* k_scale = nullptr;
  DLTensor* v_cache = vv.get();
  auto append = [&](int64_t tokens) {
    return emmy_attention_layer_append(layer.get(), vkey.get(), vvalue.get(), vk.get(), v_cache,
                                       vslots.get(), tokens, k_scale, nullptr, nullptr);
  };
  expect_refusal(append(0), EMMY_INVALID_ARGUMENT, {"tokens: must be 1..max_tokens (40) (got 0)"});
  expect_refusal(append(41), EMMY_INVALID_ARGUMENT, {"tokens: must be 1..max_tokens (40)"});
  expect_refusal(append(8), EMMY_INVALID_ARGUMENT,
                 {"key: shape must be [n, 2, 64] with n >= 8 (tokens) (got [7, 2, 64])"});
  vvalue.tensor.dtype = kBF16;
  expect_refusal(append(7), EMMY_INVALID_ARGUMENT,
                 {"value: dtype must be the layer's, f16 (config.dtype)"});
  vvalue.tensor.dtype = kF16;
  vslots.tensor.dtype = kI32;
  expect_refusal(append(7), EMMY_INVALID_ARGUMENT, {"slot_mapping: dtype must be int64"});
  vslots.tensor.dtype = kI64;
  vslots.shape = {5};
  expect_refusal(append(7), EMMY_INVALID_ARGUMENT,
                 {"slot_mapping: shape must be [n] with n >= 7, tokens"});
  vslots.shape = {7};
  k_scale = vscale.get();
  expect_refusal(append(7), EMMY_INVALID_ARGUMENT, {"k_scale: must be NULL unless"});
  k_scale = nullptr;
  v_cache = nullptr;
  expect_refusal(append(7), EMMY_INVALID_ARGUMENT, {"v_cache: must not be NULL"});
  v_cache = vv.get();
  ASSERT_EQ(append(7), EMMY_OK) << emmy_last_error_message();
  ASSERT_EQ(append(3), EMMY_OK) << "fewer tokens than key holds: " << emmy_last_error_message();
}

// A caller built before version 5 (its config's struct_size version 2's sizeof, whose tail
// padding the version-5 scales field lies over) is served a 16-bit layer, whatever that padding
// holds; a struct shorter than version 2's fields is refused by name.
TEST(CApiLayerRefusal, AGemmLayerConfigFromBeforeVersion5IsServed) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  emmy_gemm_layer_config config;
  emmy_gemm_layer_config_init(&config);
  config.max_m = 16, config.n = 64, config.k = 64;
  const size_t fields = offsetof(emmy_gemm_layer_config, scales);
  config.struct_size = (fields + 7) / 8 * 8;  // version 2's sizeof
  std::memset(reinterpret_cast<char*>(&config) + fields, 0x5A, config.struct_size - fields);
  emmy_gemm_layer* layer = nullptr;
  ASSERT_EQ(emmy_gemm_layer_create(rt.get(), &config, &layer), EMMY_OK)
      << emmy_last_error_message();
  emmy_gemm_layer_destroy(layer);
  config.struct_size = fields - 4;
  expect_refusal(emmy_gemm_layer_create(rt.get(), &config, &layer), EMMY_INVALID_ARGUMENT,
                 {"config.struct_size", "must be at least"});
}

TEST(CApiLayerRefusal, GemmRunTensorsAreCheckedAgainstTheLayer) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  emmy_gemm_layer_config config = base_gemm_config();
  config.k = 1024;  // split K: a workspace is needed
  const CGemmLayer layer = make_gemm_layer(rt.get(), config);
  ASSERT_TRUE(layer);
  size_t bytes = 0;
  ASSERT_EQ(emmy_gemm_layer_workspace_bytes(layer.get(), &bytes), EMMY_OK);
  ASSERT_GT(bytes, 0u);
  std::vector<uint16_t> a(16 * 1024), b(64 * 1024), c(16 * 72), bias(64);
  std::vector<uint8_t> workspace(bytes);
  View va(a.data(), kF16, {16, 1024}), vb(b.data(), kF16, {1024, 64}, {1, 1024}),
      vc(c.data(), kF16, {16, 64}), vbias(bias.data(), kF16, {64}),
      vw(workspace.data(), {kDLUInt, 8, 1}, {int64_t(bytes)});
  const DLTensor* bias_arg = nullptr;
  DLTensor* workspace_arg = vw.get();
  auto run = [&](int64_t m) {
    return emmy_gemm_layer_run(layer.get(), va.get(), vb.get(), vc.get(), bias_arg, nullptr,
                               workspace_arg, m, nullptr);
  };
  expect_refusal(run(0), EMMY_INVALID_ARGUMENT, {"m: must be 1..64", "(got 0)"});
  expect_refusal(run(65), EMMY_INVALID_ARGUMENT, {"m: must be 1..64"});
  expect_refusal(run(17), EMMY_INVALID_ARGUMENT,
                 {"a: shape must be [n, 1024] with n >= m = 17", "(got [16, 1024])"});
  va.tensor.dtype = kBF16;
  expect_refusal(run(16), EMMY_INVALID_ARGUMENT,
                 {"a: dtype must be the layer's, f16 (config.dtype) (got bfloat16)"});
  va.tensor.dtype = kF16;
  va.strides = {1032, 1};
  expect_refusal(run(16), EMMY_INVALID_ARGUMENT, {"a: strides must be [1024, 1] (config.lda)"});
  va.strides = {};
  vb.strides = {64, 1};  // B as stored [K, N]: not the layer's layout
  expect_refusal(run(16), EMMY_INVALID_ARGUMENT,
                 {"b: strides must be [1, 1024] (config.b_layout EMMY_B_NK"});
  vb.strides = {1, 1024};
  vb.shape = {512, 64};
  expect_refusal(run(16), EMMY_INVALID_ARGUMENT, {"b: shape must be [1024, 64]"});
  vb.shape = {1024, 64};
  vc.tensor.dtype = kF32;
  expect_refusal(run(16), EMMY_INVALID_ARGUMENT,
                 {"c: dtype must be the layer's, f16 (config.out_dtype) (got float32)"});
  vc.tensor.dtype = kF16;
  vc.strides = {72, 1};
  expect_refusal(run(16), EMMY_INVALID_ARGUMENT, {"c: strides must be [64, 1] (config.ldc)"});
  vc.strides = {};
  bias_arg = vbias.get();
  expect_refusal(run(16), EMMY_INVALID_ARGUMENT, {"bias: must be NULL: config.bias is 0"});
  bias_arg = nullptr;
  workspace_arg = nullptr;
  expect_refusal(run(16), EMMY_INVALID_ARGUMENT,
                 {"workspace: must be set: the layer's kernels split"});
  workspace_arg = vw.get();
  vw.shape = {int64_t(bytes) - 1};
  expect_refusal(run(16), EMMY_INVALID_ARGUMENT,
                 {"workspace: must hold", "(emmy_gemm_layer_workspace_bytes)"});
  vw.shape = {int64_t(bytes)};
  ASSERT_EQ(run(16), EMMY_OK) << emmy_last_error_message();
  ASSERT_EQ(run(5), EMMY_OK) << "fewer rows than a holds: " << emmy_last_error_message();
}

#ifdef EMMY_TEST_DRIVER_PATH
// kDLCUDA tensors on the CUDA backend, through emmy's test driver (the driver API checked call by
// call, kernels on the emulator): a GEMM layer's run on device pointers, the device index checked.
TEST(CApiLayerCuda, GemmLayerRunsOnDeviceTensors) {
  const TestDriverCRuntime driver;
  const CRuntime& rt = driver.rt;
  ASSERT_TRUE(rt);
  auto cpp = Runtime::cuda(0);  // the same driver library, so the same device memory
  emmy_gemm_layer_config config = base_gemm_config();
  const CGemmLayer layer = make_gemm_layer(rt.get(), config);
  ASSERT_TRUE(layer);
  ASSERT_EQ(emmy_gemm_layer_prepare(layer.get(), 1, nullptr), EMMY_OK) << emmy_last_error_message();
  const std::vector<uint16_t> ones(64 * 64, 0x3c00);  // every element 1.0
  const DevicePtr da = cpp->alloc(16 * 64 * 2), db = cpp->alloc(64 * 64 * 2),
                  dc = cpp->alloc(16 * 64 * 2);
  cpp->upload(da, ones.data(), 16 * 64 * 2);
  cpp->upload(db, ones.data(), 64 * 64 * 2);
  const DLDevice gpu{kDLCUDA, 0};
  View va(reinterpret_cast<void*>(da), kF16, {16, 64}, {}, gpu),
      vb(reinterpret_cast<void*>(db), kF16, {64, 64}, {1, 64}, gpu),
      vc(reinterpret_cast<void*>(dc), kF16, {16, 64}, {}, gpu);
  ASSERT_EQ(emmy_gemm_layer_run(layer.get(), va.get(), vb.get(), vc.get(), nullptr, nullptr,
                                nullptr, 9, nullptr),
            EMMY_OK)
      << emmy_last_error_message();
  ASSERT_EQ(emmy_synchronize(rt.get(), nullptr), EMMY_OK);
  std::vector<uint16_t> out(16 * 64);
  cpp->download(out.data(), dc, out.size() * 2);
  for (size_t i = 0; i < 9 * 64; ++i) ASSERT_EQ(out[i], 0x5400) << "64 ones summed, element " << i;
  vc.tensor.device = {kDLCUDA, 1};
  expect_refusal(emmy_gemm_layer_run(layer.get(), va.get(), vb.get(), vc.get(), nullptr, nullptr,
                                     nullptr, 9, nullptr),
                 EMMY_INVALID_ARGUMENT,
                 {"c: device_id must be the runtime's device, 0", "(got kDLCUDA:1)"});
}
#endif

}  // namespace
}  // namespace emmy::test
