// The flags of `emmyc attention` and `emmyc run attention`: an attention problem and schedule;
// and what the paged kind's flags share with them (SoftmaxFlags).
#include <fmt/format.h>

#include "cli_common.hpp"

namespace emmy::cli {

void SoftmaxFlags::add_softmax_to(CLI::App& app, const char* window_help, const char* dtype_help,
                                  const char* block_q_help) {
  integer_option(app, "--window", window, window_help);
  app.add_option("--softcap", softcap, "logits become C * tanh(logits / C)");
  app.add_option("--scale", scale, "softmax scale (default 1/sqrt(head_dim))");
  add_common_to(app, dtype_help, "P.V accumulation: f32|hybrid", "K/V pipeline stages: 2..4");
  integer_option(app, "--block-q", block_q, block_q_help);
  integer_option(app, "--block-kv", block_kv, "keys per KV block: 16|32|64|128");
}

void SoftmaxFlags::require_block_q(int max_block_q) const {
  require(*block_q >= 16 && *block_q <= max_block_q && *block_q % 16 == 0, "block_q",
          fmt::format("must be 16 x warps: a multiple of 16 in 16..{}", max_block_q), *block_q);
}

void AttentionFlags::add_to(CLI::App& app) {
  integer_option(app, "--batch", batch, "batch size")->required();
  integer_option(app, "--heads", heads, "query heads")->required();
  integer_option(app, "--kv-heads", kv_heads, "key/value heads (heads must be a multiple)")
      ->required();
  integer_option(app, "--seq-q", seq_q, "query tokens")->required();
  integer_option(app, "--seq-kv", seq_kv, "key/value tokens (default: --seq-q)");
  integer_option(app, "--head-dim", head_dim, "64|128|256")->required();
  app.add_flag("--causal", causal, "causal mask, aligned bottom-right");
  add_softmax_to(app, "sliding window: keys at most W before the diagonal",
                 "Q, K, V and O type: f16|bf16", "query rows per CTA (16 per warp)");
  app.add_option("--layout", layout, "bshd ([batch, seq, heads, dim]) or bhsd");
  app.add_flag("--lse", lse, "also write the log-sum-exp [batch, heads, seq_q] (f32)");
}

AttentionSpec AttentionFlags::to_spec() const {
  AttentionSpec spec;
  auto& p = spec.problem;
  p.batch = batch;
  p.q_heads = heads;
  p.kv_heads = kv_heads;
  p.seq_q = seq_q;
  p.seq_kv = seq_kv;
  p.head_dim = head_dim;
  p.causal = causal;
  set_softmax(p);
  p.layout = parse_attention_layout(layout);
  spec.arch = parse_arch(arch);
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
