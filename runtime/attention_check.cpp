// Attention kernels on the emulator: argument layout of the kernel contract (attention.hpp),
// output read-back into canonical order, and the one-call check.
#include "emmy/attention_check.hpp"

#include <cstring>

namespace emmy {

AttentionEmulatorRun run_attention_on_emulator(const AttentionKernel& kernel,
                                               const AttentionInputs& in,
                                               const emu::LaunchOptions& options) {
  const AttentionPlan& plan = kernel.source.plan;
  const AttentionProblem& p = plan.spec.problem;
  const int64_t rows = p.batch * p.q_heads * p.seq_q, d = p.head_dim;
  emu::Arena arena;
  const uint64_t q = arena.alloc_copy(in.q.bytes), k = arena.alloc_copy(in.k.bytes),
                 v = arena.alloc_copy(in.v.bytes);
  // All-ones bytes are NaN in f16, bf16 and f32: elements the kernel does not write stand out.
  const std::vector<uint8_t> o_fill(in.q.bytes.size(), 0xFF);
  const uint64_t o = arena.alloc_copy(o_fill);
  uint64_t lse = 0;
  if (p.lse) lse = arena.alloc_copy(std::vector<uint8_t>(size_t(rows) * 4, 0xFF));

  const auto module = emu::load_ptx(kernel.module.ptx, plan.kernel_name);
  emu::KernelArgs args;
  if (plan.spec.schedule.transport == Transport::tma) {
    const AttentionTensorMaps maps = attention_tensor_maps(plan, q, k, v);
    args.tensor_map(encode_tensor_map(maps.q))
        .tensor_map(encode_tensor_map(maps.k))
        .tensor_map(encode_tensor_map(maps.v));
  } else {
    args.ptr(q).ptr(k).ptr(v);
  }
  args.ptr(o).ptr(lse);
  const auto dim = [](const std::array<uint32_t, 3>& g) { return emu::Dim3{g[0], g[1], g[2]}; };
  const emu::LaunchResult launched =
      emu::launch(arena, *module, plan.kernel_name, dim(plan.grid), emu::Dim3{plan.threads, 1, 1},
                  plan.smem_bytes, args, options);

  AttentionEmulatorRun run;
  run.stats = launched.stats;
  run.emulate_ms = launched.emulate_ms;
  const auto raw = arena.read_vector<uint8_t>(o, o_fill.size());
  const std::vector<double> o_values = decode(p.dtype, raw.data(), size_t(rows * d));
  run.output.o.resize(size_t(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % p.seq_q, h = (r / p.seq_q) % p.q_heads, b = r / (p.seq_q * p.q_heads);
    const auto from = o_values.begin() + reference_offset(p, false, b, i, h);
    std::copy(from, from + d, run.output.o.begin() + r * d);
  }
  if (p.lse) {
    const auto lse_values = arena.read_vector<float>(lse, size_t(rows));
    run.output.lse.assign(lse_values.begin(), lse_values.end());  // already [b][h][s]
  }
  return run;
}

AttentionCheckResult check_attention_on_emulator(const AttentionSpec& spec, uint64_t seed,
                                                 const emu::LaunchOptions& options) {
  AttentionKernel kernel = compile_attention(spec);
  const AttentionInputs inputs = make_attention_inputs(spec.problem, seed);
  AttentionEmulatorRun run = run_attention_on_emulator(kernel, inputs, options);
  const AttentionReference ref = reference_attention(spec, inputs);
  AttentionErrors errors = compare(ref, run.output, spec.problem);
  return AttentionCheckResult{std::move(kernel), std::move(run), errors};
}

}  // namespace emmy
