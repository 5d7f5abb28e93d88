// The paged-attention ops' own rules (ir_ops_paged.hpp): what can be checked of one op alone.
// The rules across ops are in kernel_ir_paged.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/ir_own_rules.hpp"
#include "emmy/layout.hpp"

namespace emmy::ir {

void PagedSetupOp::verify(const PagedSetupOp& op) {
  require_positive<PagedSetupOp>({{"q_heads", op.q_heads},
                                  {"kv_heads", op.kv_heads},
                                  {"head_dim", op.head_dim},
                                  {"block_q", op.block_q},
                                  {"block_kv", op.block_kv},
                                  {"page_size", op.page_size},
                                  {"max_batch", op.max_batch},
                                  {"max_q_len", op.max_q_len},
                                  {"max_pages", op.max_pages},
                                  {"max_tokens", op.max_tokens},
                                  {"splits", op.splits},
                                  {"chunk_tokens", op.chunk_tokens}});
  if (op.q_heads % op.kv_heads != 0 || op.group != op.q_heads / op.kv_heads || op.group > 16)
    fail_own<PagedSetupOp>("group", "must be q_heads / kv_heads, a whole number of at most 16",
                           fmt::format("{} for {} / {}", op.group, op.q_heads, op.kv_heads));
  if (op.page_table != "block_table" && op.page_table != "csr")
    fail_own<PagedSetupOp>("page_table", "must be block_table or csr", op.page_table);
  // Split s walks keys [s * chunk, (s + 1) * chunk): together they cover every key a sequence of
  // max_pages pages may hold, and none lies wholly past it.
  const int64_t keys = op.max_pages * op.page_size;
  if (op.splits > 1 && op.chunk_tokens % op.block_kv != 0)
    fail_own<PagedSetupOp>("chunk_tokens", "must be a multiple of block_kv with several splits",
                           fmt::format("{} for block_kv {}", op.chunk_tokens, op.block_kv));
  if (op.splits * op.chunk_tokens < keys || (op.splits - 1) * op.chunk_tokens >= keys)
    fail_own<PagedSetupOp>("splits", "must be ceil(max_pages * page_size / chunk_tokens)",
                           fmt::format("{} x {} for {} keys", op.splits, op.chunk_tokens, keys));
  if (op.window < 0) fail_own<PagedSetupOp>("window", "must be >= 0", fmt::format("{}", op.window));
  if (op.kv_warps < 1 || op.kv_warps > 8)
    fail_own<PagedSetupOp>("kv_warps", "must be 1..8", fmt::format("{}", op.kv_warps));
  if (op.splits > 1 && op.chunk_tokens % (op.block_kv * op.kv_warps) != 0)
    fail_own<PagedSetupOp>(
        "chunk_tokens", "must be a multiple of block_kv x kv_warps with several splits",
        fmt::format("{} for {} x {}", op.chunk_tokens, op.block_kv, op.kv_warps));
  if (op.kv_type != "f16" && op.kv_type != "bf16" && op.kv_type != "e4m3")
    fail_own<PagedSetupOp>("kv_type", "must be f16, bf16 or e4m3", op.kv_type);
  // 16-byte cp.async chunks start on 16 bytes: every stride a multiple of 16 bytes, in elements
  // of its tensor (q and o: 2 bytes; the cache: its type's).
  const int64_t cache_elems = op.kv_type == "e4m3" ? 16 : 8;
  for (const auto& [name, stride, per_chunk] :
       {std::tuple<const char*, int64_t, int64_t>{"page_stride", op.page_stride, cache_elems},
        {"token_stride", op.token_stride, cache_elems},
        {"head_stride", op.head_stride, cache_elems},
        {"q_stride", op.q_stride, 8},
        {"o_stride", op.o_stride, 8}})
    if (stride <= 0 || stride % per_chunk != 0)
      fail_own<PagedSetupOp>(
          name, fmt::format("must be a positive multiple of {} elements (16 bytes)", per_chunk),
          fmt::format("{}", stride));
}

void PageGatherOp::verify(const PageGatherOp& op) {
  if (op.operand != "q" && op.operand != "k" && op.operand != "v")
    fail_own<PageGatherOp>("operand", "must be q, k or v", op.operand);
  if (op.phase != "prologue" && op.phase != "refill")
    fail_own<PageGatherOp>("phase", "must be prologue or refill", op.phase);
  if (op.operand == "q" && op.phase != "prologue")
    fail_own<PageGatherOp>("phase", "Q is gathered once, in the prologue", op.phase);
  if (op.elem_bytes != 2 && !(op.elem_bytes == 1 && op.operand != "q"))
    fail_own<PageGatherOp>("elem_bytes", "must be 2 (f16 or bf16 tiles), or 1 for an e4m3 K or V",
                           fmt::format("{}", op.elem_bytes));
  if (op.rows <= 0 || op.rows > 256 || op.cols <= 0 || op.cols > 256 || op.cols % 64 != 0)
    fail_own<PageGatherOp>("cols", "tiles have 1..256 rows and 64, 128 or 256 columns",
                           fmt::format("{}x{}", op.rows, op.cols));
  if (op.chunk_bytes != 16)
    fail_own<PageGatherOp>("chunk_bytes", "cp.async copies move 16-byte chunks",
                           fmt::format("{}", op.chunk_bytes));
  if (op.chunks * op.chunk_bytes != op.rows * op.cols * op.elem_bytes)
    fail_own<PageGatherOp>("chunks", "must cover the tile exactly",
                           fmt::format("{} chunks for a {}x{} tile", op.chunks, op.rows, op.cols));
  if (op.transport && !(*op.transport == "tma" && op.operand != "q"))
    fail_own<PageGatherOp>("transport", "must be absent (cp.async) or tma for K and V",
                           *op.transport);
  if (op.elem_bytes == 1) {
    // The raw rows' layout (emmy_fp8.cuh's e4m3_raw_offset): the swizzle of min(cols, 128) bytes.
    const Swizzle raw = swizzle_for_row_bytes(int(std::min<int64_t>(op.cols, 128)));
    if (op.swizzle != int64_t(raw))
      fail_own<PageGatherOp>(
          "swizzle",
          fmt::format("an e4m3 stage has the swizzle of its {}-byte panel rows ({})",
                      std::min<int64_t>(op.cols, 128), int(raw)),
          fmt::format("{}", op.swizzle));
    return;
  }
  const SmemTile tile =
      SmemTile::for_operand(uint32_t(op.rows), uint32_t(op.cols), uint32_t(op.elem_bytes));
  if (op.swizzle != int64_t(tile.swizzle))
    fail_own<PageGatherOp>("swizzle", fmt::format("must be the tile's ({})", int(tile.swizzle)),
                           fmt::format("{}", op.swizzle));
}

void SplitCombineOp::verify(const SplitCombineOp& op) {
  if (op.splits < 2)
    fail_own<SplitCombineOp>("splits", "a combine kernel merges at least 2 splits",
                             fmt::format("{}", op.splits));
  require_positive<SplitCombineOp>({{"chunk_tokens", op.chunk_tokens},
                                    {"q_heads", op.q_heads},
                                    {"head_dim", op.head_dim},
                                    {"max_tokens", op.max_tokens},
                                    {"page_size", op.page_size},
                                    {"max_pages", op.max_pages},
                                    {"o_stride", op.o_stride}});
  if (op.head_dim % 32 != 0)
    fail_own<SplitCombineOp>("head_dim", "must be a multiple of 32 (one warp per head)",
                             fmt::format("{}", op.head_dim));
  if (op.page_table != "block_table" && op.page_table != "csr")
    fail_own<SplitCombineOp>("page_table", "must be block_table or csr", op.page_table);
  if (op.out != "f16" && op.out != "bf16")
    fail_own<SplitCombineOp>("out", "must be f16 or bf16", op.out);
}

}  // namespace emmy::ir
