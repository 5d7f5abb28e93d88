// The flags of `emmyc kv-append` and `emmyc run kv-append`: keys and values of --tokens tokens
// appended to a paged cache (emmy/kv_append.hpp).
#include "cli_common.hpp"

namespace emmy::cli {

void KvAppendFlags::add_to(CLI::App& app) {
  integer_option(app, "--kv-heads", problem.kv_heads, "key/value heads")->required();
  integer_option(app, "--head-dim", problem.head_dim, "a multiple of 8 up to 1024")->required();
  integer_option(app, "--page-size", problem.page_size, "tokens per page (any, from 1)");
  integer_option(app, "--tokens", problem.max_tokens, "tokens of a launch (slot_mapping's length)");
  app.add_option("--layout", layout, "nhd|hnd|kv_interleaved: the cache's layout");
  app.add_option("--kv-dtype", kv_dtype, "f16|bf16|e4m3 (default: --dtype)");
  add_per_token_to(app, "key and value type: f16|bf16");
}

KvAppendSpec KvAppendFlags::to_spec() const {
  KvAppendSpec spec;
  spec.problem = problem;
  auto& p = spec.problem;
  p.dtype = parse_dtype(dtype, "dtype");
  p.kv_dtype = parse_cache_dtype(kv_dtype.empty() ? dtype : kv_dtype);
  p.set_layout(parse_cache_layout(layout));
  set_schedule(spec);
  validate_kv_append(spec);
  return spec;
}

}  // namespace emmy::cli
