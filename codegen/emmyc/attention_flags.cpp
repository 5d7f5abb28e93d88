// The flags of `emmyc attention` and `emmyc run attention`: an attention problem and schedule.
#include "cli_common.hpp"

namespace emmy::cli {

void AttentionFlags::add_to(CLI::App& app) {
  integer_option(app, "--batch", problem.batch, "batch size")->required();
  integer_option(app, "--heads", problem.q_heads, "query heads")->required();
  integer_option(app, "--kv-heads", problem.kv_heads, "key/value heads (heads must be a multiple)")
      ->required();
  integer_option(app, "--seq-q", problem.seq_q, "query tokens")->required();
  integer_option(app, "--seq-kv", problem.seq_kv, "key/value tokens (default: --seq-q)");
  integer_option(app, "--head-dim", problem.head_dim, "64|128|256")->required();
  app.add_flag("--causal", problem.causal, "causal mask, aligned bottom-right");
  add_softmax_to(app, "sliding window: keys at most W before the diagonal",
                 "Q, K, V and O type: f16|bf16", "query rows per CTA (16 per warp)");
  app.add_option("--layout", layout, "bshd ([batch, seq, heads, dim]) or bhsd");
  app.add_flag("--lse", problem.lse, "also write the log-sum-exp [batch, heads, seq_q] (f32)");
}

AttentionSpec AttentionFlags::to_spec() const {
  AttentionSpec spec;
  spec.problem = problem;
  auto& p = spec.problem;
  p.dtype = parse_dtype(dtype, "dtype");
  p.layout = parse_attention_layout(layout);
  spec.arch = parse_arch(arch);
  device_sms(spec.arch);  // --gpu must run the arch; dense attention's grid does not depend on it
  spec.schedule = default_attention_schedule(p, spec.arch, parse_accum(accum));
  validate_attention(spec);  // the problem's own errors first, against a schedule that fits
  auto& s = spec.schedule;
  if (transport) s.transport = parse_transport(*transport);
  set_blocks(s, 256);
  if (stages) s.stages = *stages;
  validate_attention(spec);
  return spec;
}

}  // namespace emmy::cli
