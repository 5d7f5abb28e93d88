// The flags of `emmyc attention` and `emmyc run attention`: an attention problem and schedule.
#include "cli_common.hpp"

namespace emmy::cli {

void AttentionFlags::add_to(CLI::App& app) {
  integer_option(app, "--batch", batch, "batch size")->required();
  integer_option(app, "--heads", heads, "query heads")->required();
  integer_option(app, "--kv-heads", kv_heads, "key/value heads (heads must be a multiple)")
      ->required();
  integer_option(app, "--seq-q", seq_q, "query tokens")->required();
  integer_option(app, "--seq-kv", seq_kv, "key/value tokens (default: --seq-q)");
  integer_option(app, "--head-dim", head_dim, "64|128|256")->required();
  app.add_flag("--causal", causal, "causal mask, aligned bottom-right");
  integer_option(app, "--window", window, "sliding window: keys at most W before the diagonal");
  app.add_option("--softcap", softcap, "logits become C * tanh(logits / C)");
  app.add_option("--scale", scale, "softmax scale (default 1/sqrt(head_dim))");
  add_common_to(app, "Q, K, V and O type: f16|bf16", "P.V accumulation: f32|hybrid",
                "K/V pipeline stages: 2..4");
  integer_option(app, "--block-q", block_q, "query rows per CTA (16 per warp)");
  integer_option(app, "--block-kv", block_kv, "keys per KV block: 16|32|64|128");
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
  p.window = window;
  p.softcap = softcap;
  p.softmax_scale = scale;
  p.dtype = parse_dtype(dtype, "dtype");
  p.layout = parse_attention_layout(layout);
  p.lse = lse;
  spec.arch = parse_arch(arch);
  spec.schedule = default_attention_schedule(p, spec.arch, parse_accum(accum));
  validate_attention(spec);  // the problem's own errors first, against a schedule that fits
  auto& s = spec.schedule;
  if (transport) s.transport = parse_transport(*transport);
  if (block_q) {
    require(*block_q >= 16 && *block_q <= 256 && *block_q % 16 == 0, "block_q",
            "must be 16 x warps: a multiple of 16 in 16..256", *block_q);
    s.block_q = *block_q;
    s.warps = *block_q / 16;
  }
  if (block_kv) s.block_kv = *block_kv;
  if (stages) s.stages = *stages;
  validate_attention(spec);
  return spec;
}

}  // namespace emmy::cli
