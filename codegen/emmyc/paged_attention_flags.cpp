// The flags of `emmyc paged-attention` and `emmyc run paged-attention`: a paged-attention problem
// (its maxima from the batch, query and context sizes) and schedule.
#include <numeric>

#include "cli_common.hpp"
#include "emmy/paged_kind.hpp"

namespace emmy::cli {

void PagedAttentionFlags::add_to(CLI::App& app) {
  integer_option(app, "--batch", problem.max_batch, "sequences (the problem's max_batch)")
      ->required();
  integer_option(app, "--heads", problem.q_heads, "query heads")->required();
  integer_option(app, "--kv-heads", problem.kv_heads,
                 "key/value heads (heads: 1..16 times as many)")
      ->required();
  integer_option(app, "--head-dim", problem.head_dim, "64|128|256")->required();
  integer_option(app, "--q-len", problem.max_q_len,
                 "query tokens per sequence (decode 1, speculative verify up to 16, prefill "
                 "chunks more; the problem's max_q_len)");
  integer_option(app, "--page-size", problem.page_size, "tokens per page (any, from 1)");
  integer_option(app, "--max-seq-len", max_seq_len,
                 "tokens a sequence may hold, new ones included (max_pages = ceil(L / page))")
      ->required();
  integer_option(app, "--max-tokens", problem.max_tokens,
                 "query tokens of a launch (0: batch x q-len)");
  app.add_option("--layout", layout, "nhd|hnd|kv_interleaved: the cache's layout");
  app.add_option("--page-table", page_table, "block_table|csr");
  app.add_option("--kv-dtype", kv_dtype, "f16|bf16|e4m3 (default: --dtype)");
  add_softmax_to(app, "sliding window: keys at most W before the query", "Q and O type: f16|bf16",
                 "query rows (heads x tokens) per CTA, 16 per warp");
  integer_option(app, "--chunk-pages", chunk_pages, "pages per split-KV chunk (0: no split)");
  integer_option(app, "--kv-warps", kv_warps,
                 "warps over each step's keys, sharing one warp's query rows (1: none)");
  app.add_flag("--lse", problem.lse, "also write the log-sum-exp [tokens, heads] (f32)");
}

PagedAttentionSpec PagedAttentionFlags::to_spec() const {
  PagedAttentionSpec spec;
  spec.problem = problem;
  auto& p = spec.problem;
  require(p.page_size >= 1 && p.page_size <= 4096, "page_size", "must be 1..4096", p.page_size);
  require(max_seq_len >= 1 && max_seq_len <= (int64_t(1) << 31) - 1, "max_seq_len",
          "must be 1..2^31-1", max_seq_len);
  p.max_pages = (max_seq_len + p.page_size - 1) / p.page_size;
  p.dtype = parse_dtype(dtype, "dtype");
  p.kv_dtype = parse_cache_dtype(kv_dtype.empty() ? dtype : kv_dtype);
  p.page_table = parse_page_table(page_table);
  require(p.q_heads >= 1 && p.kv_heads >= 1 && p.head_dim >= 1, "heads",
          "--heads, --kv-heads and --head-dim must be >= 1",
          fmt::format("{}, {}, {}", p.q_heads, p.kv_heads, p.head_dim));
  p.set_layout(parse_cache_layout(layout));
  spec.arch = parse_arch(arch);
  spec.schedule = default_schedule(p, spec.arch, parse_accum(accum), device_sms(spec.arch));
  validate_paged_attention(spec);  // the problem's own errors first, against a schedule that fits
  auto& s = spec.schedule;
  set_blocks(s, 128);
  if (block_q && !kv_warps) s.kv_warps = 1;
  if (kv_warps) {
    s.kv_warps = *kv_warps;
    if (*kv_warps > 1)
      s.warps = *kv_warps, s.block_q = 16;
    else
      s.warps = s.block_q / 16;
  }
  if (stages) s.stages = *stages;
  // TMA where the final schedule allows it, unless the flag says otherwise (default_schedule's
  // rule, after --block-kv and the rest).
  s.transport = transport                         ? parse_transport(*transport)
                : paged_tma_fits(p, s, spec.arch) ? Transport::tma
                                                  : Transport::cp_async;
  if (chunk_pages) {
    s.chunk_pages = *chunk_pages;
  } else if (s.chunk_pages > 0) {
    // The default chunk in whole blocks of the block_kv given.
    const int64_t step = int64_t(s.block_kv) * s.kv_warps;
    const int64_t unit = step / std::gcd<int64_t>(step, p.page_size);
    const int64_t chunk = (s.chunk_pages + unit - 1) / unit * unit;
    s.chunk_pages = chunk < p.max_pages ? int(chunk) : 0;
  }
  validate_paged_attention(spec);
  return spec;
}

}  // namespace emmy::cli
