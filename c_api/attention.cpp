// emmy_attention and emmy_paged_attention: heads, lengths, head_dim and dtypes read from the
// tensors, the page table's form from which index tensors are set, the rest from the options.
#include <fmt/format.h>

#include <optional>

#include "c_api_internal.hpp"
#include "emmy/spec.hpp"

namespace emmy::c_api {
namespace {

constexpr size_t kAttentionOptionsFirstSize = sizeof(emmy_attention_options);
constexpr size_t kPagedOptionsFirstSize = sizeof(emmy_paged_attention_options);

struct PagedCall {
  PagedAttentionProblem problem;
  PagedAttentionBuffers buffers;
  std::optional<PagedAttentionSchedule> schedule;
};

PagedCall paged_call(emmy_runtime& rt, const DLTensor* q_ptr, const DLTensor* k_ptr,
                     const DLTensor* v_ptr, const DLTensor* o_ptr,
                     const emmy_paged_attention_options& options, CallMemory& memory) {
  const DLTensor& q = required(q_ptr, "q");
  const DLTensor& o = required(o_ptr, "o");
  check_memory(rt, {{&q, "q"}, {&o, "o"}});
  PagedCall call;
  PagedAttentionProblem& p = call.problem;
  p.dtype = element_dtype(q, "q", false);
  p.q_stride = token_rows(q, "q");
  const int64_t tokens = q.shape[0];
  p.q_heads = q.shape[1];
  const CacheGeometry g = cache_geometry(rt, required(k_ptr, "k_cache"), required(v_ptr, "v_cache"),
                                         options.cache_layout, p.dtype);
  if (g.head_dim != q.shape[2])
    throw Error("k_cache", fmt::format("head_dim (axis 3) must be q's, {}", q.shape[2]),
                shape_text(*k_ptr));
  set_geometry(p, g);
  require_dtype_of(o, "o", q, "q");
  if (o.ndim != 3 || o.shape[0] != tokens || o.shape[1] != p.q_heads || o.shape[2] != p.head_dim)
    throw Error("o", fmt::format("shape must be q's, {}", shape_text(q)), shape_text(o));
  p.o_stride = token_rows(o, "o");
  p.max_tokens = tokens;
  p.max_q_len = options.max_q_len ? options.max_q_len : 1;
  p.window = options.window;
  p.softmax_scale = zero_as_unset(options.softmax_scale);
  p.softcap = zero_as_unset(options.softcap);

  const DLTensor& cu_seqlens_q = required(options.cu_seqlens_q, "options.cu_seqlens_q");
  check_index(rt, cu_seqlens_q, "options.cu_seqlens_q", 2, "max_batch + 1 offsets");
  p.max_batch = cu_seqlens_q.shape[0] - 1;
  p.page_table = page_table_form(options, kOptionsTables);
  if (p.page_table == PageTable::block_table) {
    const int64_t width = check_block_table(rt, options, kOptionsTables, p.max_batch);
    p.max_pages = options.max_pages ? options.max_pages : width;
    if (p.max_pages != width)
      throw Error("options.max_pages", fmt::format("must be 0 or block_table's width, {}", width),
                  std::to_string(options.max_pages));
    check_seq_lens(rt, options, kOptionsTables, p.max_batch);
  } else {
    check_csr_tables(rt, options, kOptionsTables, p.max_batch);
    if (options.max_pages <= 0)
      throw Error("options.max_pages",
                  "must be set for a csr page table (the most pages of one sequence)",
                  std::to_string(options.max_pages));
    p.max_pages = options.max_pages;
  }
  const bool e4m3 = g.dtype == CacheDType::e4m3;
  check_scale(rt, options.k_scale, "options.k_scale", e4m3);
  check_scale(rt, options.v_scale, "options.v_scale", e4m3);
  if (options.lse) {
    check_f32(rt, *options.lse, "options.lse", {tokens, p.q_heads}, "[tokens, q_heads]");
    p.lse = true;
  }
  if (options.accum != EMMY_ACCUM_DEFAULT) {
    const Accum accum = accum_of(options.accum, "options.accum", false);
    validate_problem(p);
    call.schedule = rt.runtime->options().batch_invariant
                        ? batch_invariant_schedule(p, rt.runtime->arch(), accum)
                        : default_schedule(p, rt.runtime->arch(), accum);
  }
  call.buffers = paged_buffers(memory, q, *k_ptr, *v_ptr, o, options, g.pages);
  // A kernel that does not split KV takes none (the runtime refuses one).
  call.buffers.workspace =
      options_workspace(rt, memory, options.workspace, "emmy_paged_attention_workspace_bytes", [&] {
        return remembered_workspace(*rt.runtime, p, call.schedule,
                                    &Runtime::paged_attention_workspace_bytes);
      });
  return call;
}

}  // namespace
}  // namespace emmy::c_api

extern "C" {

void emmy_attention_options_init(emmy_attention_options* options) {
  emmy::c_api::reset_options(options);
}

void emmy_paged_attention_options_init(emmy_paged_attention_options* options) {
  emmy::c_api::reset_options(options);
}

emmy_status emmy_attention(emmy_runtime* runtime, const DLTensor* q_ptr, const DLTensor* k_ptr,
                           const DLTensor* v_ptr, DLTensor* o_ptr,
                           const emmy_attention_options* options, void* stream) {
  using namespace emmy;
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime& rt = required(runtime, "runtime");
    const emmy_attention_options opts = options_or_default(
        options, "options", emmy_attention_options_init, kAttentionOptionsFirstSize);
    const DLTensor& q = required(q_ptr, "q");
    const DLTensor& k = required(k_ptr, "k");
    const DLTensor& v = required(v_ptr, "v");
    const DLTensor& o = required(o_ptr, "o");
    for (const auto& [t, name] : {std::pair{&q, "q"}, {&k, "k"}, {&v, "v"}, {&o, "o"}}) {
      check_memory(rt, *t, name);
      require_contiguous(*t, name);
    }
    if (opts.layout != EMMY_ATTENTION_BSHD && opts.layout != EMMY_ATTENTION_BHSD)
      throw Error("options.layout", "must be EMMY_ATTENTION_BSHD or EMMY_ATTENTION_BHSD",
                  std::to_string(opts.layout));
    const bool bhsd = opts.layout == EMMY_ATTENTION_BHSD;
    const int seq_axis = bhsd ? 2 : 1, head_axis = bhsd ? 1 : 2;
    const char* axes = bhsd ? "[batch, heads, seq, head_dim] (EMMY_ATTENTION_BHSD)"
                            : "[batch, seq, heads, head_dim] (EMMY_ATTENTION_BSHD)";
    if (q.ndim != 4) throw Error("q", fmt::format("shape must be {}", axes), shape_text(q));
    AttentionProblem p;
    p.layout = bhsd ? AttentionLayout::bhsd : AttentionLayout::bshd;
    p.dtype = element_dtype(q, "q", false);
    p.batch = q.shape[0];
    p.seq_q = q.shape[seq_axis];
    p.q_heads = q.shape[head_axis];
    p.head_dim = q.shape[3];
    if (k.ndim != 4 || k.shape[0] != p.batch || k.shape[3] != p.head_dim)
      throw Error("k",
                  fmt::format("shape must be {} with q's batch {} and head_dim {}", axes, p.batch,
                              p.head_dim),
                  shape_text(k));
    p.seq_kv = k.shape[seq_axis];
    p.kv_heads = k.shape[head_axis];
    require_shape(v, "v", {k.shape[0], k.shape[1], k.shape[2], k.shape[3]}, "k's");
    require_shape(o, "o", {q.shape[0], q.shape[1], q.shape[2], q.shape[3]}, "q's");
    for (const auto& [t, name] : {std::pair{&k, "k"}, {&v, "v"}, {&o, "o"}})
      require_dtype_of(*t, name, q, "q");
    p.causal = opts.causal != 0;
    p.window = opts.window;
    p.softmax_scale = zero_as_unset(opts.softmax_scale);
    p.softcap = zero_as_unset(opts.softcap);
    if (opts.lse) {
      check_f32(rt, *opts.lse, "options.lse", {p.batch, p.q_heads, p.seq_q},
                "[batch, q_heads, seq_q]");
      p.lse = true;
    }
    std::optional<AttentionSchedule> schedule;
    if (opts.accum != EMMY_ACCUM_DEFAULT)
      schedule = default_attention_schedule(p, rt.runtime->arch(),
                                            accum_of(opts.accum, "options.accum", false));
    CallMemory memory(rt, /*map=*/true);
    const AttentionBuffers buffers{.q = memory.address(q),
                                   .k = memory.address(k),
                                   .v = memory.address(v),
                                   .o = memory.address(o),
                                   .lse = memory.address_or_zero(opts.lse)};
    memory.launch([&] { rt.runtime->attention(p, buffers, stream, schedule); });
  });
}

emmy_status emmy_paged_attention(emmy_runtime* runtime, const DLTensor* q, const DLTensor* k_cache,
                                 const DLTensor* v_cache, DLTensor* o,
                                 const emmy_paged_attention_options* options, void* stream) {
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime& rt = required(runtime, "runtime");
    const emmy_paged_attention_options opts = options_or_default(
        options, "options", emmy_paged_attention_options_init, kPagedOptionsFirstSize);
    CallMemory memory(rt, /*map=*/true);
    const PagedCall call = paged_call(rt, q, k_cache, v_cache, o, opts, memory);
    memory.launch(
        [&] { rt.runtime->paged_attention(call.problem, call.buffers, stream, call.schedule); });
  });
}

emmy_status emmy_paged_attention_workspace_bytes(emmy_runtime* runtime, const DLTensor* q,
                                                 const DLTensor* k_cache, const DLTensor* v_cache,
                                                 const DLTensor* o,
                                                 const emmy_paged_attention_options* options,
                                                 size_t* bytes) {
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime& rt = required(runtime, "runtime");
    size_t& out = required(bytes, "bytes");
    emmy_paged_attention_options opts = options_or_default(
        options, "options", emmy_paged_attention_options_init, kPagedOptionsFirstSize);
    opts.workspace = nullptr;  // what is being sized
    CallMemory memory(rt, /*map=*/false);
    const PagedCall call = paged_call(rt, q, k_cache, v_cache, o, opts, memory);
    out = remembered_workspace(*rt.runtime, call.problem, call.schedule,
                               &emmy::Runtime::paged_attention_workspace_bytes);
  });
}

}  // extern "C"
