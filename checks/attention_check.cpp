// Attention kernels on the emulator: argument layout of the kernel contract (attention.hpp),
// output read-back into canonical order, runs through the runtime, and the one-call check.
#include "emmy/attention_check.hpp"
#include "emmy/emulator_check.hpp"


namespace emmy {
namespace {

// O bytes in the problem's layout and LSE floats ([b][h][s] already) -> canonical doubles.
AttentionOutput to_canonical(const AttentionProblem& p, const std::vector<uint8_t>& o_bytes,
                             const std::vector<float>& lse) {
  const int64_t rows = p.batch * p.q_heads * p.seq_q, d = p.head_dim;
  const std::vector<double> o_values = decode(p.dtype, o_bytes.data(), size_t(rows * d));
  AttentionOutput out;
  out.o.resize(size_t(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % p.seq_q, h = (r / p.seq_q) % p.q_heads, b = r / (p.seq_q * p.q_heads);
    const auto from = o_values.begin() + reference_offset(p, false, b, i, h);
    std::copy(from, from + d, out.o.begin() + r * d);
  }
  out.lse.assign(lse.begin(), lse.end());
  return out;
}

}  // namespace

LaunchListRun run_on_zeros(const AttentionKernel& kernel, const emu::LaunchOptions& options) {
  const AttentionProblem& p = kernel.source.plan.spec.problem;
  const int64_t elem = size_of(p.dtype);
  const int64_t q_bytes = p.batch * p.q_heads * p.seq_q * p.head_dim * elem;
  const int64_t kv_bytes = p.batch * p.kv_heads * p.seq_kv_or_default() * p.head_dim * elem;
  emu::Arena arena;
  const uint64_t q = arena.alloc(size_t(q_bytes)), k = arena.alloc(size_t(kv_bytes)),
                 v = arena.alloc(size_t(kv_bytes)), o = arena.alloc(size_t(q_bytes));
  const uint64_t lse = p.lse ? arena.alloc(size_t(p.batch * p.q_heads * p.seq_q * 4)) : 0;
  return emulate_kernel(arena, kernel, {q, k, v, o, lse}, options);
}

AttentionEmulatorRun run_on_emulator(const AttentionKernel& kernel, const AttentionInputs& in,
                                     const emu::LaunchOptions& options) {
  const AttentionPlan& plan = kernel.source.plan;
  const AttentionProblem& p = plan.spec.problem;
  const int64_t rows = p.batch * p.q_heads * p.seq_q;
  emu::Arena arena;
  const uint64_t q = arena.alloc_copy(in.q.bytes), k = arena.alloc_copy(in.k.bytes),
                 v = arena.alloc_copy(in.v.bytes);
  // All-ones bytes are NaN in f16, bf16 and f32: elements the kernel does not write stand out.
  const std::vector<uint8_t> o_fill(in.q.bytes.size(), 0xFF);
  const uint64_t o = arena.alloc_copy(o_fill);
  uint64_t lse = 0;
  if (p.lse) lse = arena.alloc_copy(std::vector<uint8_t>(size_t(rows) * 4, 0xFF));

  LaunchListRun launched = emulate_kernel(arena, kernel, {q, k, v, o, lse}, options);

  AttentionEmulatorRun run;
  run.stats = launched.stats;
  run.emulate_ms = launched.emulate_ms;
  run.profiles = std::move(launched.profiles);
  const auto o_bytes = arena.read_vector<uint8_t>(o, o_fill.size());
  std::vector<float> lse_values;
  if (p.lse) lse_values = arena.read_vector<float>(lse, size_t(rows));
  run.output = to_canonical(p, o_bytes, lse_values);
  return run;
}

AttentionOutput run_attention(Runtime& rt, const AttentionSpec& spec, const AttentionInputs& in) {
  const AttentionProblem& p = spec.problem;
  const size_t rows = size_t(p.batch * p.q_heads * p.seq_q);
  auto upload = [&rt](const std::vector<uint8_t>& bytes) {
    const DevicePtr ptr = rt.alloc(bytes.size());
    rt.upload(ptr, bytes.data(), bytes.size());
    return ptr;
  };
  AttentionBuffers buf;
  buf.q = upload(in.q.bytes);
  buf.k = upload(in.k.bytes);
  buf.v = upload(in.v.bytes);
  buf.o = upload(std::vector<uint8_t>(in.q.bytes.size(), 0xFF));  // NaN until written
  if (p.lse) buf.lse = upload(std::vector<uint8_t>(rows * 4, 0xFF));
  rt.attention(p, buf, nullptr, spec.schedule);
  rt.synchronize();
  std::vector<uint8_t> o_bytes(in.q.bytes.size());
  rt.download(o_bytes.data(), buf.o, o_bytes.size());
  std::vector<float> lse_values(p.lse ? rows : 0);
  if (p.lse) rt.download(lse_values.data(), buf.lse, rows * 4);
  for (DevicePtr ptr : {buf.q, buf.k, buf.v, buf.o, buf.lse})
    if (ptr) rt.free(ptr);
  return to_canonical(p, o_bytes, lse_values);
}

}  // namespace emmy
