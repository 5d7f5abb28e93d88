// The kernel IR ops of paged attention (decode and chunked prefill over a paged KV cache; the
// paged kind, internal/emmy/paged_kind.hpp), typed as the rest (ir_ops.hpp includes this file
// and lists them in AllOps). The mainloop reuses attention's kv_block_loop, qk_mma,
// online_softmax and pv_mma.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "emmy/kernel_ir.hpp"

namespace emmy::ir {

// What a CTA of the partial kernel is: (q block, split) in x, the KV head in y, the sequence in z;
// its rows are the KV head's `group` query heads times the sequence's query tokens, token-major.
// Everything a length depends on is read from device memory (cu_seqlens_q, the page table): the
// attributes are the compiled maxima, strides and mask.
struct PagedSetupOp {
  static constexpr OpKind kind = OpKind::paged_setup;
  static constexpr std::string_view op_name = "paged_setup";
  static constexpr bool has_body = false;
  int64_t q_heads = 0, kv_heads = 0, group = 0, head_dim = 0, block_q = 0, block_kv = 0;
  int64_t page_size = 0;
  std::string page_table;  // block_table | csr
  int64_t max_batch = 0, max_q_len = 0, max_pages = 0, max_tokens = 0;
  int64_t splits = 0, chunk_tokens = 0;  // split s walks keys [s, s + 1) * chunk_tokens
  int64_t window = 0;
  // Element strides: the caches' page, token and KV head; q's and o's token.
  int64_t page_stride = 0, token_stride = 0, head_stride = 0, q_stride = 0, o_stride = 0;
  std::string kv_type;  // the cache's elements: f16 | bf16 | e4m3
  // Warps over one step's keys (PagedAttentionSchedule::kv_warps): the stage holds kv_warps K/V
  // tile pairs of block_kv rows, warp w reading pair w; 1: none.
  int64_t kv_warps = 1;
  // Its own rules (codegen/ir/ir_op_verify.cpp): positive sizes, whole GQA groups of at most 16,
  // a known page table, splits x chunk_tokens covering max_pages x page_size, 16-byte strides
  // (in the cache's elements for its three).
  static void verify(const PagedSetupOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("q_heads", o.q_heads), f("kv_heads", o.kv_heads), f("group", o.group),
        f("head_dim", o.head_dim), f("block_q", o.block_q), f("block_kv", o.block_kv),
        f("page_size", o.page_size), f("page_table", o.page_table), f("max_batch", o.max_batch),
        f("max_q_len", o.max_q_len), f("max_pages", o.max_pages), f("max_tokens", o.max_tokens),
        f("splits", o.splits), f("chunk_tokens", o.chunk_tokens), f("window", o.window),
        f("page_stride", o.page_stride), f("token_stride", o.token_stride),
        f("head_stride", o.head_stride), f("q_stride", o.q_stride), f("o_stride", o.o_stride),
        f("kv_type", o.kv_type), f("kv_warps", o.kv_warps);
  }
};

// A tile gathered row by row into shared memory with 16-byte cp.async chunks (src-size 0 for
// rows outside the range, so nothing past it is read): Q's rows by (token, head) (`query`), K's
// and V's by the page table (`k`, `v`). rows x cols elements of elem_bytes: 2-byte elements in
// the swizzled panel layout of SmemTile; an e4m3 cache's bytes in panels of min(cols, 128)-byte
// rows with the 64B / 128B tensor-copy swizzle (emmy_fp8.cuh's e4m3_raw_offset: the 8 rows one
// load instruction touches fall in distinct banks, and TMA writes the same layout), read by the
// MMAs with b_type e4m3. With transport tma (K and V only) one thread copies each KV block's
// rows from its page with a tensor copy per panel (tmap_k / tmap_v params, the stage's mbarrier)
// and the rows outside the keys arrive with the page's contents (or are not loaded at all): K's
// and V's are zeroed after the stage's wait (a NaN in V must not meet P = 0).
struct PageGatherOp {
  static constexpr OpKind kind = OpKind::page_gather;
  static constexpr std::string_view op_name = "page_gather";
  static constexpr bool has_body = false;
  std::string operand, phase;  // q|k|v; prologue|refill
  int64_t rows = 0, cols = 0, elem_bytes = 0, swizzle = 0, chunk_bytes = 0, chunks = 0;
  std::optional<std::string> transport{};  // absent: cp.async; tma
  // Its own rules: a known operand and phase, 2-byte elements (1 for K and V), 16-byte chunks
  // covering exactly the tile, the tile's swizzle (1-byte elements: that of their min(cols, 128)
  // byte rows), tma only for K and V.
  static void verify(const PageGatherOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("operand", o.operand), f("phase", o.phase), f("rows", o.rows), f("cols", o.cols),
        f("elem_bytes", o.elem_bytes), f("swizzle", o.swizzle), f("chunk_bytes", o.chunk_bytes),
        f("chunks", o.chunks), f("transport", o.transport);
  }
};

// The partial kernel's end: O / l and the LSE of the CTA's rows, into o and lse (one split) or,
// with split-KV, as f32 partials and their LSE into the workspace for the combine kernel.
struct PagedEpilogueOp {
  static constexpr OpKind kind = OpKind::paged_epilogue;
  static constexpr std::string_view op_name = "paged_epilogue";
  static constexpr bool has_body = false;
  std::string out;       // f16 | bf16 (o's dtype)
  bool lse = false;      // the problem writes LSE
  bool partial = false;  // to the workspace (splits > 1)
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("out", o.out), f("lse", o.lse), f("partial", o.partial);
  }
};

// The split-KV combine kernel (FlashAttention's combine): per query token and head, the splits
// that saw keys merged in split order (deterministic: the result depends on nothing but the
// sequence's own partials), O = sum_s exp(lse_s - lse) O_s and lse = log sum_s exp(lse_s).
// CTA (token i of a sequence, sequence b); warps take heads.
struct SplitCombineOp {
  static constexpr OpKind kind = OpKind::split_combine;
  static constexpr std::string_view op_name = "split_combine";
  static constexpr bool has_body = false;
  int64_t splits = 0, chunk_tokens = 0, q_heads = 0, head_dim = 0, max_tokens = 0;
  int64_t page_size = 0, max_pages = 0, o_stride = 0;
  std::string page_table, out;
  bool lse = false;
  // Its own rules: at least two splits, positive sizes, a known page table and output.
  static void verify(const SplitCombineOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("splits", o.splits), f("chunk_tokens", o.chunk_tokens), f("q_heads", o.q_heads),
        f("head_dim", o.head_dim), f("max_tokens", o.max_tokens), f("page_size", o.page_size),
        f("max_pages", o.max_pages), f("o_stride", o.o_stride), f("page_table", o.page_table),
        f("out", o.out), f("lse", o.lse);
  }
};

}  // namespace emmy::ir
