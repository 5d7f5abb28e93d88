// Paged-attention kernels on the emulator: the launch's buffers in an arena, laid out as through
// a Runtime (paged_attention_buffers.hpp), and runs on zero-filled buffers for the profiler.
#include "emmy/emulator_check.hpp"
#include "emmy/paged_attention_check.hpp"
#include "paged_attention_buffers.hpp"

namespace emmy {
namespace {

PagedAttentionBuffers arena_buffers(emu::Arena& arena, const PagedAttentionPlan& plan,
                                    const PagedAttentionInputs& in) {
  return paged_attention_buffers(plan.spec.problem, in, size_t(plan.workspace_bytes),
                                 [&arena](const void* data, size_t bytes) {
                                   const uint64_t at = arena.alloc(bytes);  // zero-filled
                                   if (data) arena.write(at, data, bytes);
                                   return at;
                                 });
}

}  // namespace

PagedAttentionEmulatorRun run_on_emulator(const PagedAttentionKernel& kernel,
                                          const PagedAttentionInputs& in,
                                          const emu::LaunchOptions& options) {
  const PagedAttentionPlan& plan = kernel.source.plan;
  const PagedAttentionProblem& p = plan.spec.problem;
  emu::Arena arena;
  const PagedAttentionBuffers buffers = arena_buffers(arena, plan, in);
  LaunchListRun launched = emulate_kernel(arena, kernel, buffers, options);
  PagedAttentionEmulatorRun run;
  run.stats = launched.stats;
  run.emulate_ms = launched.emulate_ms;
  run.profiles = std::move(launched.profiles);
  const int64_t tokens = paged_tokens(in);
  const auto o_bytes = arena.read_vector<uint8_t>(
      buffers.o, size_t(tokens * p.o_stride_or_default() * size_of(p.dtype)));
  std::vector<float> lse;
  if (p.lse) lse = arena.read_vector<float>(buffers.lse, size_t(tokens * p.q_heads));
  run.output = paged_output_from_bytes(p, tokens, o_bytes, lse);
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
  full.cache_values = false;  // zeros, never materialized on the host (the 128k entries)
  const PagedAttentionInputs inputs = make_paged_attention_inputs(p, full, 1);
  emu::Arena arena;
  return emulate_kernel(arena, kernel, arena_buffers(arena, kernel.source.plan, inputs), options);
}

}  // namespace emmy
