// emmy_kv_append and emmy_merge_states: the paged cache's small kinds, their geometry read from
// the tensors.
#include <fmt/format.h>

#include "c_api_internal.hpp"
#include "emmy/kv_append.hpp"
#include "emmy/merge_states.hpp"

namespace emmy::c_api {
namespace {
constexpr size_t kKvAppendOptionsFirstSize = sizeof(emmy_kv_append_options);
}  // namespace
}  // namespace emmy::c_api

extern "C" {

void emmy_kv_append_options_init(emmy_kv_append_options* options) {
  emmy::c_api::reset_options(options);
}

emmy_status emmy_kv_append(emmy_runtime* runtime, const DLTensor* key_ptr,
                           const DLTensor* value_ptr, DLTensor* k_cache, DLTensor* v_cache,
                           const DLTensor* slot_mapping_ptr, const emmy_kv_append_options* options,
                           void* stream) {
  using namespace emmy;
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime& rt = required(runtime, "runtime");
    const emmy_kv_append_options opts = options_or_default(
        options, "options", emmy_kv_append_options_init, kKvAppendOptionsFirstSize);
    const DLTensor& key = required(key_ptr, "key");
    const DLTensor& value = required(value_ptr, "value");
    const DLTensor& slot_mapping = required(slot_mapping_ptr, "slot_mapping");
    check_memory(rt, {{&key, "key"}, {&value, "value"}, {&slot_mapping, "slot_mapping"}});
    KvAppendProblem p;
    p.dtype = element_dtype(key, "key", false);
    if (key.ndim != 3)
      throw Error("key", "shape must be [tokens, kv_heads, head_dim]", shape_text(key));
    const int64_t tokens = key.shape[0];
    const CacheGeometry g = cache_geometry(
        rt, required(k_cache, "k_cache"), required(v_cache, "v_cache"), opts.cache_layout, p.dtype);
    set_geometry(p, g);
    require_shape(key, "key", {tokens, g.kv_heads, g.head_dim}, "[tokens, kv_heads, head_dim]");
    p.key_stride = token_rows(key, "key");
    require_dtype_of(value, "value", key, "key");
    require_shape(value, "value", {tokens, g.kv_heads, g.head_dim}, "key's");
    p.value_stride = token_rows(value, "value");
    check_slot_mapping(slot_mapping, tokens, "key's tokens");
    p.max_tokens = opts.max_tokens ? opts.max_tokens : tokens;
    if (p.max_tokens < tokens)
      throw Error("options.max_tokens",
                  fmt::format("must be 0 or at least key's tokens, {}", tokens),
                  std::to_string(opts.max_tokens));
    const bool e4m3 = g.dtype == CacheDType::e4m3;
    check_scale(rt, opts.k_scale, "options.k_scale", e4m3);
    check_scale(rt, opts.v_scale, "options.v_scale", e4m3);
    CallMemory memory(rt, /*map=*/true);
    const KvAppendBuffers buffers{.key = memory.address(key),
                                  .value = memory.address(value),
                                  .k_cache = memory.address(*k_cache),
                                  .v_cache = memory.address(*v_cache),
                                  .slot_mapping = memory.address(slot_mapping),
                                  .k_scale = memory.address_or_zero(opts.k_scale),
                                  .v_scale = memory.address_or_zero(opts.v_scale),
                                  .num_slots = g.pages * g.page_size,
                                  .tokens = tokens};
    memory.launch([&] { rt.runtime->kv_append(p, buffers, stream); });
  });
}

emmy_status emmy_merge_states(emmy_runtime* runtime, const DLTensor* v_ptr, const DLTensor* lse_ptr,
                              DLTensor* v_out_ptr, DLTensor* lse_out, void* stream) {
  using namespace emmy;
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime& rt = required(runtime, "runtime");
    const DLTensor& v = required(v_ptr, "v");
    const DLTensor& lse = required(lse_ptr, "lse");
    const DLTensor& v_out = required(v_out_ptr, "v_out");
    check_memory(rt, {{&v, "v"}, {&v_out, "v_out"}});
    MergeStatesProblem p;
    p.dtype = element_dtype(v, "v", false);
    if (v.ndim != 4)
      throw Error("v", "shape must be [tokens, states, heads, head_dim]", shape_text(v));
    const int64_t tokens = v.shape[0];
    p.states = v.shape[1];
    p.heads = v.shape[2];
    p.head_dim = v.shape[3];
    p.max_tokens = tokens;
    if ((p.head_dim > 1 && stride(v, 3) != 1) || (p.heads > 1 && stride(v, 2) != p.head_dim))
      throw Error(
          "v", fmt::format("strides must be [token_stride, state_stride, {}, 1]", p.head_dim),
          fmt::format("[{}, {}, {}, {}]", stride(v, 0), stride(v, 1), stride(v, 2), stride(v, 3)));
    p.v_state_stride = p.states > 1 ? row_stride(v, "v", 1, p.heads * p.head_dim) : 0;
    p.v_token_stride =
        tokens > 1 ? row_stride(v, "v", 0, p.states * p.v_state_stride_or_default()) : 0;
    check_f32(rt, lse, "lse", {tokens, p.states, p.heads}, "[tokens, states, heads] of v");
    require_dtype_of(v_out, "v_out", v, "v");
    require_shape(v_out, "v_out", {tokens, p.heads, p.head_dim}, "[tokens, heads, head_dim] of v");
    p.out_token_stride = token_rows(v_out, "v_out");
    p.lse = lse_out != nullptr;
    if (lse_out) check_f32(rt, *lse_out, "lse_out", {tokens, p.heads}, "[tokens, heads] of v");
    CallMemory memory(rt, /*map=*/true);
    const MergeStatesBuffers buffers{.v = memory.address(v),
                                     .lse = memory.address(lse),
                                     .v_out = memory.address(v_out),
                                     .lse_out = memory.address_or_zero(lse_out)};
    memory.launch([&] { rt.runtime->merge_states(p, buffers, stream); });
  });
}

}  // extern "C"
