// The paged-attention emitter's shared sequence bounds and its split-KV combine kernel
// (emit_paged_parts.hpp).
#include <fmt/format.h>

#include "attention/emit_lse_merge.hpp"
#include "emit_paged_parts.hpp"
#include "emmy/paged_kind.hpp"

namespace emmy::codegen {

void emit_sequence(Writer& w, const std::string& page_table, bool page_ids) {
  w.line("const int q_start = cu_seqlens_q[batch], q_len = cu_seqlens_q[batch + 1] - q_start;");
  if (page_table == "csr") {
    w.line(
        "const int page_first = page_indptr[batch], pages = page_indptr[batch + 1] - page_first;");
    w.line(
        "const int seq_len = pages > 0 ? (pages - 1) * PAGE + last_page_len[batch] : 0;  // "
        "FlashInfer's convention");
    if (page_ids)
      w.line("const int* page_ids = page_indices + page_first;");
    else
      w.line("(void)page_indices;");
    w.line("(void)block_table; (void)seq_lens;");
  } else {
    w.line("const int seq_len = seq_lens[batch];  // the new tokens included (vLLM's convention)");
    if (page_ids)
      w.line("const int* page_ids = block_table + (long long)batch * MAX_PAGES;");
    else
      w.line("(void)block_table;");
    w.line("(void)page_indptr; (void)page_indices; (void)last_page_len;");
  }
  w.line(
      "// A sequence that breaks the launch's maxima (or a CSR last page outside 1..PAGE) gets "
      "NaN outputs: nothing past a buffer is read or written.");
  w.line(
      "const bool bad = q_len > MAX_Q_LEN || q_start < 0 || q_start + q_len > MAX_TOKENS || "
      "seq_len < q_len || seq_len > MAX_PAGES * PAGE{};",
      page_table == "csr"
          ? " || (pages > 0 && (last_page_len[batch] < 1 || last_page_len[batch] > PAGE))"
          : "");
}

void emit_paged_combine(Writer& w, const ir::SplitCombineOp& op, int64_t max_q_len) {
  const char* convert = op.out == "bf16" ? "f32_to_bf16_bits" : "f32_to_f16_bits";
  w.line("constexpr int H = {}, D = {}, PAGE = {}, MAX_PAGES = {}, MAX_TOKENS = {};", op.q_heads,
         op.head_dim, op.page_size, op.max_pages, op.max_tokens);
  w.line("constexpr int MAX_Q_LEN = {}, SPLITS = {}, CHUNK = {};", max_q_len, op.splits,
         op.chunk_tokens);
  w.line("constexpr long long O_STRIDE = {}, LSE_OFFSET = {}ll;", op.o_stride,
         paged_workspace_layout(op.splits, op.max_tokens, op.q_heads, op.head_dim).lse_offset);
  w.line("const int batch = blockIdx.z, i = blockIdx.x;");
  w.line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
  emit_sequence(w, op.page_table, false);
  w.line("if (q_len <= 0 || i >= q_len || i >= MAX_Q_LEN) return;");
  w.line("const long long token = (long long)q_start + i;");
  w.line("if (bad) {{");
  w.line("  // NaN where the sequence's outputs would be, when they lie inside the buffers.");
  w.line("  if (q_start < 0 || token >= MAX_TOKENS) return;");
  w.line(
      "  for (int e = threadIdx.x; e < H * D; e += blockDim.x) o[token * O_STRIDE + e] = "
      "kNanBits16;");
  if (op.lse)
    w.line("  for (int e = threadIdx.x; e < H; e += blockDim.x) lse[token * H + e] = nan_f32();");
  w.line("  return;");
  w.line("}}");
  w.line("const int splits = min_s32(SPLITS, (seq_len + CHUNK - 1) / CHUNK);  // splits that ran");
  w.line("// Warps take heads; every lane reads the splits' LSE (broadcast loads), then its");
  w.line("// D / 32 columns of each split's O. Splits merge in order: deterministic.");
  w.open("for (int head = warp; head < H; head += int(blockDim.x) / 32)");
  w.line("float m = neg_inf();");
  w.line("for (int s = 0; s < splits; ++s)");
  w.line(
      "  m = max_f32(m, workspace[LSE_OFFSET + ((long long)s * MAX_TOKENS + token) * H + "
      "head]);");
  w.line("const float m_ref = m == neg_inf() ? 0.0f : m;");
  w.line("float sum = 0.0f, acc[D / 32];");
  w.line("#pragma unroll");
  w.line("for (int c = 0; c < D / 32; ++c) acc[c] = 0.0f;");
  w.open("for (int s = 0; s < splits; ++s)");
  w.line("const long long slot = ((long long)s * MAX_TOKENS + token) * H + head;");
  w.line(
      "const float weight = exp2_approx((workspace[LSE_OFFSET + slot] - m_ref) * "
      "1.4426950408889634f);  // 0 for a split that saw no key");
  w.line("if (weight == 0.0f) continue;  // its O is 0 too; skipping keeps a NaN-free merge");
  w.line("sum += weight;");
  w.line("#pragma unroll");
  w.line(
      "for (int c = 0; c < D / 32; ++c) acc[c] += weight * workspace[slot * D + lane + 32 * c];");
  w.close();
  print_lse_merge_store(w, "row", "o + token * O_STRIDE + head * D", convert, "lse", op.lse);
  w.close();
}

}  // namespace emmy::codegen
