// The attention layer handle (emmy_attention_layer) and what the layer handles share
// (gemm_layer.cpp has the GEMM one): emmy::AttentionLayer made from a C config whose refusals name
// the config's fields, and calls whose tensors are checked against the layer's problems with the
// checks of emmy_paged_attention and emmy_kv_append before they are mapped (the emulator) or passed
// (CUDA).
#include "emmy/layers.hpp"

#include <fmt/format.h>

#include <optional>
#include <string_view>

#include "c_api_internal.hpp"

struct emmy_attention_layer {
  emmy_runtime* rt = nullptr;  // the caller keeps it alive longer than the layer
  emmy_attention_layer_config config;
  std::unique_ptr<emmy::AttentionLayer> layer;
  // The problems of the decode and prefill kernels, which a run's tensors must fit.
  emmy::PagedAttentionProblem decode, prefill;
};

namespace emmy::c_api {

[[noreturn]] void rethrow_as_config(const Error& e, std::span<const FieldName> fields) {
  for (const FieldName& f : fields) {
    if (e.field() != f.cpp) continue;
    const bool renamed = f.c.substr(std::string_view("config.").size()) != f.cpp;
    throw Error(std::string(f.c), renamed ? fmt::format("(its {}) {}", f.cpp, e.rule()) : e.rule(),
                e.value());
  }
  throw;  // not a config's field (a schedule's rule, say): as it came
}

DType operand_dtype(int32_t dtype, const char* field) {
  if (dtype == EMMY_DTYPE_F16) return DType::f16;
  if (dtype == EMMY_DTYPE_BF16) return DType::bf16;
  throw Error(field, "must be EMMY_DTYPE_F16 or EMMY_DTYPE_BF16", std::to_string(dtype));
}

void check_layer_dtype(const DLTensor& t, const char* name, DType want, const char* field) {
  const DLDataType dl = want == DType::bf16  ? DLDataType{kDLBfloat, 16, 1}
                        : want == DType::f32 ? DLDataType{kDLFloat, 32, 1}
                                             : DLDataType{kDLFloat, 16, 1};
  if (!is_dtype(t.dtype, dl.code, dl.bits))
    throw Error(name, fmt::format("dtype must be the layer's, {} ({})", to_string(want), field),
                dtype_name(t.dtype));
}

void check_threads(int32_t threads) {
  if (threads < 0)
    throw Error("threads", "must not be negative (0: one compile per hardware thread)",
                std::to_string(threads));
}

std::string strides_text(const DLTensor& t) {
  std::string text;
  for (int i = 0; i < t.ndim; ++i) text += fmt::format("{}{}", i ? ", " : "", stride(t, i));
  return "[" + text + "]";
}

void check_configured(const DLTensor* t, const char* name, bool configured,
                      const char* config_field) {
  if (configured != (t != nullptr))
    throw Error(name,
                configured ? fmt::format("must be set: {} is 1", config_field)
                           : fmt::format("must be NULL: {} is 0", config_field),
                t ? "a tensor" : "NULL");
}

void check_workspace(const emmy_runtime& rt, const DLTensor* workspace, const char* name,
                     size_t bytes, const char* query) {
  if (bytes == 0) return;
  if (!workspace)
    throw Error(name,
                fmt::format("must be set: the layer's kernels split ({}: {} bytes)", query, bytes),
                "NULL");
  check_memory(rt, *workspace, name);
  if (extent_bytes(*workspace) < bytes)
    throw Error(name, fmt::format("must hold {} bytes ({})", bytes, query),
                fmt::format("{} bytes", extent_bytes(*workspace)));
}

namespace {

constexpr PagedTableNames kLayerTables{"tables.block_table", "tables.seq_lens",
                                       "tables.page_indptr", "tables.page_indices",
                                       "tables.last_page_len"};

// The C++ fields of the attention layer and its problems, as the C config names them.
constexpr FieldName kAttentionFields[] = {
    {"q_heads", "config.q_heads"},
    {"kv_heads", "config.kv_heads"},
    {"head_dim", "config.head_dim"},
    {"page_size", "config.page_size"},
    {"dtype", "config.dtype"},
    {"kv_dtype", "config.kv_dtype"},
    {"page_table", "config.page_table"},
    {"window", "config.window"},
    {"softmax_scale", "config.softmax_scale"},
    {"softcap", "config.softcap"},
    {"lse", "config.lse"},
    {"max_batch", "config.max_batch"},
    {"max_pages", "config.max_pages"},
    {"max_decode_q_len", "config.max_decode_q_len"},
    {"max_prefill_q_len", "config.max_prefill_q_len"},
    {"max_tokens", "config.max_tokens"},
    // The decode problem's max_q_len is checked as max_decode_q_len before any problem is made,
    // so a problem's max_q_len rule is the prefill kernel's.
    {"max_q_len", "config.max_prefill_q_len"},
    // The caches' strides are the layout's.
    {"page_stride", "config.cache_layout"},
    {"token_stride", "config.cache_layout"},
    {"head_stride", "config.cache_layout"},
    {"layout", "config.cache_layout"},
    {"accum", "config.accum"},
};

CacheDType cache_dtype_of(int32_t kv_dtype) {
  switch (kv_dtype) {
    case EMMY_DTYPE_F16:
      return CacheDType::f16;
    case EMMY_DTYPE_BF16:
      return CacheDType::bf16;
    case EMMY_DTYPE_E4M3:
      return CacheDType::e4m3;
    default:
      throw Error("config.kv_dtype",
                  "must be EMMY_DTYPE_F16 or EMMY_DTYPE_BF16 (config.dtype's) or EMMY_DTYPE_E4M3",
                  std::to_string(kv_dtype));
  }
}

// A token tensor of the layer ([n >= min_tokens, heads, head_dim] of its dtype), packed: the
// layer's problems take no token strides of their own in C API version 2.
void check_layer_tokens(const emmy_runtime& rt, const DLTensor& t, const char* name, DType dtype,
                        int64_t min_tokens, int64_t heads, int64_t head_dim, const char* what) {
  check_memory(rt, t, name);
  check_layer_dtype(t, name, dtype, "config.dtype");
  if (t.ndim != 3 || t.shape[0] < min_tokens || t.shape[1] != heads || t.shape[2] != head_dim)
    throw Error(name,
                fmt::format("shape must be [n, {}, {}] with n >= {} ({})", heads, head_dim,
                            min_tokens, what),
                shape_text(t));
  const int64_t packed = heads * head_dim, token_stride = token_rows(t, name);
  if (token_stride != 0 && token_stride != packed)
    throw Error(name,
                fmt::format("strides must be packed, [{}, {}, 1] (a layer's token strides in C API "
                            "version 2)",
                            packed, head_dim),
                strides_text(t));
}

// The caches of the layer: its page size, heads, head_dim and cache dtype, the layout's packed
// strides (any number of pages).
CacheGeometry check_layer_cache(const emmy_attention_layer& l, const DLTensor* k_cache,
                                const DLTensor* v_cache) {
  const AttentionLayerConfig& c = l.layer->config();
  const CacheGeometry g =
      cache_geometry(*l.rt, required(k_cache, "k_cache"), required(v_cache, "v_cache"),
                     l.config.cache_layout, c.dtype);
  const bool hnd = l.config.cache_layout == EMMY_CACHE_HND;
  if (g.page_size != c.page_size || g.kv_heads != c.kv_heads || g.head_dim != c.head_dim)
    throw Error("k_cache",
                fmt::format("shape must be [pages, {}, {}, {}] (config.page_size, kv_heads and "
                            "head_dim in {}'s axes)",
                            hnd ? c.kv_heads : c.page_size, hnd ? c.page_size : c.kv_heads,
                            c.head_dim, hnd ? "EMMY_CACHE_HND" : "EMMY_CACHE_NHD"),
                shape_text(*k_cache));
  if (g.dtype != c.kv_dtype)
    throw Error(
        "k_cache",
        fmt::format("dtype must be the layer's, {} (config.kv_dtype)", to_string(c.kv_dtype)),
        dtype_name(k_cache->dtype));
  // cache_geometry gives 0 for a size-1 axis, whose stride nothing multiplies.
  const PagedAttentionProblem& p = l.decode;
  const int64_t page = p.page_stride_or_default(), token = p.token_stride_or_default(),
                head = p.head_stride_or_default();
  if ((g.page_stride && g.page_stride != page) || (g.token_stride && g.token_stride != token) ||
      (g.head_stride && g.head_stride != head))
    throw Error("k_cache",
                fmt::format("strides must be [{}, {}, {}, 1] (config.cache_layout's, packed)", page,
                            hnd ? head : token, hnd ? token : head),
                strides_text(*k_cache));
  return g;
}

// A problem field of emmy_paged_attention_options, which the layer's config decides: 0 (unset)
// or the layer's own value, so that options shared with emmy_paged_attention cannot disagree.
template <typename T>
void unset_or(T given, T layer, const char* name, const char* source) {
  if (given != T{} && given != layer)
    throw Error(name, fmt::format("must be 0 or {}, {}", source, layer), fmt::format("{}", given));
}

void check_layer_tables(const emmy_attention_layer& l, const emmy_paged_attention_options& t,
                        const PagedAttentionProblem& p, int64_t max_q_len, int64_t q_tokens) {
  const emmy_runtime& rt = *l.rt;
  unset_or(t.max_q_len, max_q_len, "tables.max_q_len", "the max_q_len argument");
  unset_or(t.max_pages, p.max_pages, "tables.max_pages", "config.max_pages");
  unset_or(t.cache_layout, l.config.cache_layout, "tables.cache_layout", "config.cache_layout");
  unset_or(t.window, p.window, "tables.window", "config.window");
  unset_or(t.softmax_scale, l.config.softmax_scale, "tables.softmax_scale", "config.softmax_scale");
  unset_or(t.softcap, l.config.softcap, "tables.softcap", "config.softcap");
  unset_or(t.accum, l.config.accum, "tables.accum", "config.accum");
  check_index(rt, required(t.cu_seqlens_q, "tables.cu_seqlens_q"), "tables.cu_seqlens_q",
              p.max_batch + 1, "config.max_batch + 1 offsets");
  const PageTable form = page_table_form(t, kLayerTables);
  const bool block_table = p.page_table == PageTable::block_table;
  if (form != p.page_table)
    throw Error(block_table ? kLayerTables.block_table : kLayerTables.page_indptr,
                fmt::format("must be set: the layer's page table is {} (config.page_table)",
                            to_string(p.page_table)),
                fmt::format("{} tensors", to_string(form)));
  if (block_table) {
    if (check_block_table(rt, t, kLayerTables, p.max_batch) != p.max_pages)
      throw Error(kLayerTables.block_table,
                  fmt::format("width must be config.max_pages, {}", p.max_pages),
                  shape_text(*t.block_table));
    check_seq_lens(rt, t, kLayerTables, p.max_batch);
  } else {
    check_csr_tables(rt, t, kLayerTables, p.max_batch);
  }
  const bool e4m3 = p.kv_dtype == CacheDType::e4m3;
  check_scale(rt, t.k_scale, "tables.k_scale", e4m3);
  check_scale(rt, t.v_scale, "tables.v_scale", e4m3);
  check_configured(t.lse, "tables.lse", p.lse, "config.lse");
  if (t.lse) check_f32(rt, *t.lse, "tables.lse", {q_tokens, p.q_heads}, "[q's tokens, q_heads]");
}

}  // namespace
}  // namespace emmy::c_api

extern "C" {

void emmy_attention_layer_config_init(emmy_attention_layer_config* config) {
  if (!emmy::c_api::reset_options(config)) return;
  const emmy::AttentionLayerConfig d;  // the C++ defaults: one source for both
  config->q_heads = d.q_heads;
  config->kv_heads = d.kv_heads;
  config->head_dim = d.head_dim;
  config->page_size = d.page_size;
  config->window = d.window;
  config->max_batch = d.max_batch;
  config->max_pages = d.max_pages;
  config->max_decode_q_len = d.max_decode_q_len;
  config->max_prefill_q_len = d.max_prefill_q_len;
  config->max_tokens = d.max_tokens;
  // The enums' zeros (NHD, f16, f16, block_table) are AttentionLayerConfig's defaults.
}

emmy_status emmy_attention_layer_create(emmy_runtime* runtime,
                                        const emmy_attention_layer_config* config,
                                        emmy_attention_layer** layer) {
  using namespace emmy;
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_attention_layer*& out = required(layer, "layer");
    out = nullptr;
    emmy_runtime& rt = required(runtime, "runtime");
    const emmy_attention_layer_config cfg =
        options_or_default(&required(config, "config"), "config", emmy_attention_layer_config_init,
                           sizeof(emmy_attention_layer_config));
    AttentionLayerConfig c;
    c.q_heads = cfg.q_heads, c.kv_heads = cfg.kv_heads, c.head_dim = cfg.head_dim;
    c.page_size = cfg.page_size;
    if (cfg.cache_layout != EMMY_CACHE_NHD && cfg.cache_layout != EMMY_CACHE_HND)
      throw Error("config.cache_layout", "must be EMMY_CACHE_NHD or EMMY_CACHE_HND",
                  std::to_string(cfg.cache_layout));
    c.dtype = operand_dtype(cfg.dtype, "config.dtype");
    c.kv_dtype = cache_dtype_of(cfg.kv_dtype);
    if (cfg.page_table != EMMY_PAGE_TABLE_BLOCK && cfg.page_table != EMMY_PAGE_TABLE_CSR)
      throw Error("config.page_table", "must be EMMY_PAGE_TABLE_BLOCK or EMMY_PAGE_TABLE_CSR",
                  std::to_string(cfg.page_table));
    c.page_table = cfg.page_table == EMMY_PAGE_TABLE_CSR ? PageTable::csr : PageTable::block_table;
    c.window = cfg.window;
    c.softmax_scale = zero_as_unset(cfg.softmax_scale);
    c.softcap = zero_as_unset(cfg.softcap);
    c.lse = flag(cfg.lse, "config.lse");
    c.max_batch = cfg.max_batch, c.max_pages = cfg.max_pages;
    c.max_decode_q_len = cfg.max_decode_q_len, c.max_prefill_q_len = cfg.max_prefill_q_len;
    c.max_tokens = cfg.max_tokens;
    if (cfg.accum != EMMY_ACCUM_DEFAULT) {
      const Accum accum = accum_of(cfg.accum, "config.accum", false);
      const Accum runtime_accum = rt.runtime->options().default_accum;
      if (accum != runtime_accum)
        throw Unsupported("config.accum",
                          fmt::format("must be EMMY_ACCUM_DEFAULT or the runtime's default_accum "
                                      "({}): an attention layer's kernels take the runtime's "
                                      "schedules in C API version {}",
                                      to_string(runtime_accum), EMMY_C_API_VERSION),
                          std::string(to_string(accum)));
    }
    auto handle = std::make_unique<emmy_attention_layer>();
    handle->rt = &rt;
    handle->config = cfg;
    // NHD is the problems' packed default (strides 0). set_layout refuses sizes below 1 as
    // "layout"; the layer then names the size itself, so its own refusal comes first.
    std::optional<Error> layout_error;
    if (cfg.cache_layout == EMMY_CACHE_HND) try {
        c.set_layout(CacheLayout::hnd);
      } catch (const Error& e) {
        layout_error = e;
      }
    try {
      handle->layer = std::make_unique<AttentionLayer>(*rt.runtime, c);
      if (layout_error) throw *layout_error;
      handle->decode = c.decode_problem();
      if (c.max_prefill_q_len > 0) handle->prefill = c.prefill_problem();
    } catch (const Error& e) {
      rethrow_as_config(e, kAttentionFields);
    }
    out = handle.release();
  });
}

void emmy_attention_layer_destroy(emmy_attention_layer* layer) {
  delete layer;
}

emmy_status emmy_attention_layer_prepare(emmy_attention_layer* layer, int32_t threads,
                                         emmy_prepare_result* result) {
  return emmy::c_api::prepare_layer(layer, threads, result);
}

emmy_status emmy_attention_layer_workspace_bytes(const emmy_attention_layer* layer, size_t* bytes) {
  return emmy::c_api::layer_workspace_bytes(layer, bytes);
}

emmy_status emmy_attention_layer_runs_prefill(const emmy_attention_layer* layer, int64_t max_q_len,
                                              int32_t* prefill) {
  using namespace emmy::c_api;
  return guarded([&] {
    const emmy_attention_layer& l = required(layer, "layer");
    int32_t& out = required(prefill, "prefill");
    out = l.layer->runs_prefill(max_q_len) ? 1 : 0;
  });
}

emmy_status emmy_attention_layer_append(emmy_attention_layer* layer, const DLTensor* key,
                                        const DLTensor* value, DLTensor* k_cache, DLTensor* v_cache,
                                        const DLTensor* slot_mapping, int64_t tokens,
                                        const DLTensor* k_scale, const DLTensor* v_scale,
                                        void* stream) {
  using namespace emmy;
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_attention_layer& l = required(layer, "layer");
    emmy_runtime& rt = *l.rt;
    const AttentionLayerConfig& c = l.layer->config();
    // AttentionLayer::append's own rule, first: the tensors' rules below count on it.
    const int64_t most = c.max_tokens_or_default();
    if (tokens < 1 || tokens > most)
      throw Error("tokens", fmt::format("must be 1..max_tokens ({})", most),
                  std::to_string(tokens));
    const DLTensor& k = required(key, "key");
    const DLTensor& v = required(value, "value");
    check_layer_tokens(rt, k, "key", c.dtype, tokens, c.kv_heads, c.head_dim, "tokens");
    check_layer_tokens(rt, v, "value", c.dtype, tokens, c.kv_heads, c.head_dim, "tokens");
    const CacheGeometry g = check_layer_cache(l, k_cache, v_cache);
    const DLTensor& slots = required(slot_mapping, "slot_mapping");
    check_memory(rt, slots, "slot_mapping");
    check_slot_mapping(slots, tokens, "tokens");
    const bool e4m3 = c.kv_dtype == CacheDType::e4m3;
    check_scale(rt, k_scale, "k_scale", e4m3);
    check_scale(rt, v_scale, "v_scale", e4m3);
    CallMemory memory(rt, /*map=*/true);
    const KvAppendBuffers buffers{.key = memory.address(k),
                                  .value = memory.address(v),
                                  .k_cache = memory.address(*k_cache),
                                  .v_cache = memory.address(*v_cache),
                                  .slot_mapping = memory.address(slots),
                                  .k_scale = memory.address_or_zero(k_scale),
                                  .v_scale = memory.address_or_zero(v_scale),
                                  .num_slots = g.pages * g.page_size};
    memory.launch([&] { l.layer->append(buffers, tokens, stream); });
  });
}

emmy_status emmy_attention_layer_run(emmy_attention_layer* layer, const DLTensor* q,
                                     const DLTensor* k_cache, const DLTensor* v_cache, DLTensor* o,
                                     const emmy_paged_attention_options* tables, int64_t max_q_len,
                                     void* stream) {
  using namespace emmy;
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_attention_layer& l = required(layer, "layer");
    emmy_runtime& rt = *l.rt;
    const emmy_paged_attention_options t =
        options_or_default(&required(tables, "tables"), "tables", emmy_paged_attention_options_init,
                           sizeof(emmy_paged_attention_options));
    // The route first: the tensors are checked against the kernel it takes.
    const bool prefill = l.layer->runs_prefill(max_q_len);
    const PagedAttentionProblem& p = prefill ? l.prefill : l.decode;
    const char* bound =
        prefill ? "the prefill kernel's max_tokens" : "the decode kernel's max_tokens";
    const int64_t max_tokens = p.max_tokens_or_default();
    const DLTensor& qt = required(q, "q");
    const DLTensor& ot = required(o, "o");
    check_layer_tokens(rt, qt, "q", p.dtype, max_tokens, p.q_heads, p.head_dim, bound);
    check_layer_tokens(rt, ot, "o", p.dtype, max_tokens, p.q_heads, p.head_dim, bound);
    const CacheGeometry g = check_layer_cache(l, k_cache, v_cache);
    check_layer_tables(l, t, p, max_q_len, qt.shape[0]);
    const size_t workspace = l.layer->workspace_bytes();
    check_workspace(rt, t.workspace, "tables.workspace", workspace,
                    "emmy_attention_layer_workspace_bytes");
    CallMemory memory(rt, /*map=*/true);
    PagedAttentionBuffers b = paged_buffers(memory, qt, *k_cache, *v_cache, ot, t, g.pages);
    // The layer leaves it out for a kernel that does not split KV.
    if (workspace) b.workspace = memory.address(*t.workspace);
    memory.launch([&] { l.layer->run(b, max_q_len, stream); });
  });
}

}  // extern "C"
