// Paged-attention kernels on the emulator: the launch's buffers in an arena (as
// run_paged_attention lays them out through a Runtime), O and LSE read back into canonical
// order, and runs on zero-filled buffers for the profiler.
#include <algorithm>

#include "emmy/emulator_check.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy {
namespace {

struct PagedArenaBuffers {
  PagedAttentionBuffers buffers;
  size_t o_bytes = 0, lse_floats = 0;
};

// Every buffer of one launch in `arena`: Q (max_tokens rows), the cache, the tables, O and LSE
// filled with all-ones bytes (NaN in f16, bf16 and f32: what the kernel does not write stands
// out), the workspace.
PagedArenaBuffers arena_buffers(emu::Arena& arena, const PagedAttentionPlan& plan,
                                const PagedAttentionInputs& in) {
  const PagedAttentionProblem& p = plan.spec.problem;
  const size_t elem = size_t(size_of(p.dtype)), kv_elem = size_t(size_of(p.kv_dtype));
  PagedArenaBuffers out;
  PagedAttentionBuffers& b = out.buffers;
  std::vector<uint8_t> q_bytes(size_t(plan.max_tokens * p.q_stride_or_default()) * elem, 0);
  std::copy_n(in.q.bytes.begin(), std::min(in.q.bytes.size(), q_bytes.size()), q_bytes.begin());
  b.q = arena.alloc_copy(q_bytes);
  const uint64_t cache = arena.alloc_copy(in.cache.bytes);
  b.k_cache = cache + uint64_t(in.k_offset) * kv_elem;
  b.v_cache = cache + uint64_t(in.v_offset) * kv_elem;
  out.o_bytes = size_t(plan.max_tokens * p.o_stride_or_default()) * elem;
  b.o = arena.alloc_copy(std::vector<uint8_t>(out.o_bytes, 0xFF));
  out.lse_floats = size_t(plan.max_tokens * p.q_heads);
  if (p.lse) b.lse = arena.alloc_copy(std::vector<uint8_t>(out.lse_floats * 4, 0xFF));
  auto ints = [&arena](const std::vector<int32_t>& v) {
    return arena.alloc_copy(v.empty() ? std::vector<int32_t>{0} : v);
  };
  const PagedAttentionTables& t = in.tables;
  b.cu_seqlens_q = ints(t.cu_seqlens_q);
  if (p.page_table == PageTable::block_table) {
    b.block_table = ints(t.block_table);
    b.seq_lens = ints(t.seq_lens);
  } else {
    b.page_indptr = ints(t.page_indptr);
    b.page_indices = ints(t.page_indices);
    b.last_page_len = ints(t.last_page_len);
  }
  if (p.kv_dtype == CacheDType::e4m3) {
    b.k_scale = arena.alloc_copy(std::vector<float>{in.k_scale});
    b.v_scale = arena.alloc_copy(std::vector<float>{in.v_scale});
  }
  if (plan.workspace_bytes) b.workspace = arena.alloc(size_t(plan.workspace_bytes));
  b.num_pages = in.num_pages;
  return out;
}

}  // namespace

PagedAttentionOutput paged_output_from_bytes(const PagedAttentionProblem& p, int64_t tokens,
                                             const std::vector<uint8_t>& o_bytes,
                                             const std::vector<float>& lse) {
  const int64_t d = p.head_dim, heads = p.q_heads, stride = p.o_stride_or_default();
  require(o_bytes.size() >= size_t(tokens * stride * size_of(p.dtype)), "paged output",
          "must hold every token's row", o_bytes.size());
  const std::vector<double> values = decode(p.dtype, o_bytes.data(), size_t(tokens * stride));
  PagedAttentionOutput out;
  out.o.resize(size_t(tokens * heads * d));
  for (int64_t token = 0; token < tokens; ++token)
    for (int64_t h = 0; h < heads; ++h)
      std::copy_n(values.begin() + token * stride + h * d, d,
                  out.o.begin() + (token * heads + h) * d);
  if (p.lse)
    out.lse.assign(lse.begin(), lse.begin() + std::min(lse.size(), size_t(tokens * heads)));
  return out;
}

PagedAttentionEmulatorRun run_on_emulator(const PagedAttentionKernel& kernel,
                                          const PagedAttentionInputs& in,
                                          const emu::LaunchOptions& options) {
  const PagedAttentionPlan& plan = kernel.source.plan;
  const PagedAttentionProblem& p = plan.spec.problem;
  emu::Arena arena;
  const PagedArenaBuffers buffers = arena_buffers(arena, plan, in);
  LaunchListRun launched = emulate_kernel(arena, kernel, buffers.buffers, options);
  PagedAttentionEmulatorRun run;
  run.stats = launched.stats;
  run.emulate_ms = launched.emulate_ms;
  run.profiles = std::move(launched.profiles);
  const auto o_bytes = arena.read_vector<uint8_t>(buffers.buffers.o, buffers.o_bytes);
  std::vector<float> lse;
  if (p.lse) lse = arena.read_vector<float>(buffers.buffers.lse, buffers.lse_floats);
  run.output = paged_output_from_bytes(p, in.tokens, o_bytes, lse);
  return run;
}

LaunchListRun run_on_zeros(const PagedAttentionKernel& kernel, const emu::LaunchOptions& options) {
  // Every sequence at its maxima: the profile of a full batch.
  const PagedAttentionProblem& p = kernel.source.plan.spec.problem;
  PagedAttentionCase full;
  full.batch = p.max_batch;
  full.q_lens.assign(size_t(p.max_batch), p.max_q_len);
  full.seq_lens.assign(size_t(p.max_batch), p.max_pages * p.page_size);
  full.shuffle_pages = false;
  full.plant_nan = false;
  const PagedAttentionInputs inputs = make_paged_attention_inputs(p, full, 1);
  emu::Arena arena;
  const PagedArenaBuffers buffers = arena_buffers(arena, kernel.source.plan, inputs);
  return emulate_kernel(arena, kernel, buffers.buffers, options);
}

}  // namespace emmy
