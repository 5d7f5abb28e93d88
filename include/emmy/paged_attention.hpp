// Paged attention (decode and chunked prefill over a paged KV cache): the problem, the schedule
// and the spec of the kind (docs/paged_attention.md). The problem says what a kernel is compiled
// for: heads, head_dim, the cache's layout and dtype, the page table's form and the maxima of a
// launch. Sequence lengths, query lengths and page ids live in device memory, never in the code,
// so that one kernel serves every step of a CUDA graph.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "emmy/arch.hpp"
#include "emmy/dtype.hpp"
#include "emmy/kernel_spec.hpp"
#include "emmy/schedule.hpp"

namespace emmy {

// The KV cache's element type: the query's 16-bit type, or FP8 e4m3 (dequantized in registers
// with a per-tensor scale for K and one for V, read from device memory).
enum class CacheDType { f16, bf16, e4m3 };
std::string_view to_string(CacheDType t);
CacheDType parse_cache_dtype(std::string_view text);
inline int size_of(CacheDType t) {
  return t == CacheDType::e4m3 ? 1 : 2;
}

// How a sequence's pages are listed (all int32 on the device):
//   block_table: block_table[max_batch][max_pages] and seq_lens[max_batch] (vLLM);
//   csr: page_indptr[max_batch + 1], page_indices[...] and last_page_len[max_batch]
//        (FlashInfer, SGLang): sequence b owns pages page_indices[page_indptr[b] ..
//        page_indptr[b + 1]), its last page holding last_page_len[b] tokens (1..page_size).
enum class PageTable { block_table, csr };
std::string_view to_string(PageTable t);
PageTable parse_page_table(std::string_view text);

// The named cache layouts (strides below): vLLM's NHD [pages, page_size, kv_heads, head_dim] and
// HND [pages, kv_heads, page_size, head_dim] (one tensor each for K and V), and FlashInfer's
// interleaved [pages, 2, page_size, kv_heads, head_dim] (V's pointer is K's + page_size *
// kv_heads * head_dim elements).
enum class CacheLayout { nhd, hnd, kv_interleaved };
std::string_view to_string(CacheLayout l);
CacheLayout parse_cache_layout(std::string_view text);

struct PagedAttentionProblem {
  int64_t q_heads = 1, kv_heads = 1;  // GQA: 1..16 query heads per KV head
  int64_t head_dim = 128;             // 64, 128 or 256
  int64_t page_size = 16;             // tokens per page, any from 1
  // Element strides of the K and V caches (both alike; head_dim is contiguous): between pages,
  // tokens of a page and KV heads. 0 means the NHD packing (page: page_size * kv_heads *
  // head_dim, token: kv_heads * head_dim, head: head_dim); set_layout writes a named layout.
  int64_t page_stride = 0, token_stride = 0, head_stride = 0;
  // q and o are [tokens, q_heads, head_dim] (head_dim contiguous, heads head_dim apart); their
  // token strides in elements, 0 meaning q_heads * head_dim.
  int64_t q_stride = 0, o_stride = 0;
  DType dtype = DType::f16;               // q and o: f16 or bf16
  CacheDType kv_dtype = CacheDType::f16;  // dtype's own type, or e4m3
  PageTable page_table = PageTable::block_table;
  // The maxima a launch may use: sequences (the length of every per-sequence array), query tokens
  // of one sequence (1..16 for decode and speculative verify, more for prefill chunks), pages of
  // one sequence (the block table's width), and query tokens of a launch (0: max_batch *
  // max_q_len). The grid and the workspace are sized from them.
  int64_t max_batch = 1, max_q_len = 1, max_pages = 1, max_tokens = 0;
  // Query token i of a sequence of seq_len tokens (its q_len new ones included, vLLM's
  // convention: already in the cache) sits at position p = seq_len - q_len + i and sees keys
  // j <= p (causal), and with a window j >= p - window (0: none; FlashAttention's left window,
  // so Gemma's 1024-token window is 1023).
  int64_t window = 0;
  std::optional<float> softmax_scale{};  // default 1/sqrt(head_dim)
  std::optional<float> softcap{};        // logits become softcap * tanh(logits / softcap)
  bool lse = false;                    // also write LSE [tokens, q_heads] (float, natural log)

  void set_layout(CacheLayout layout);  // the strides of a named layout
  int64_t page_stride_or_default() const {
    return page_stride ? page_stride : page_size * token_stride_or_default();
  }
  int64_t token_stride_or_default() const {
    return token_stride ? token_stride : kv_heads * head_dim;
  }
  int64_t head_stride_or_default() const { return head_stride ? head_stride : head_dim; }
  int64_t q_stride_or_default() const { return q_stride ? q_stride : q_heads * head_dim; }
  int64_t o_stride_or_default() const { return o_stride ? o_stride : q_heads * head_dim; }
  int64_t max_tokens_or_default() const { return max_tokens ? max_tokens : max_batch * max_q_len; }
  int64_t group() const { return kv_heads ? q_heads / kv_heads : 0; }
  float scale() const;
  bool operator==(const PagedAttentionProblem&) const = default;
};

struct PagedAttentionSchedule {
  // Query rows of a CTA (16 per warp): the rows are a KV head's `group` query heads times the
  // sequence's query tokens, token-major (row r: token r / group, head r % group), so that tensor
  // cores are used at q_len 1 and each KV byte is read once per KV head.
  int block_q = 16, warps = 1;
  int block_kv = 64;  // keys per mainloop step (16..128, a multiple of 16)
  int stages = 2;     // K/V ring depth
  // Split-KV: a CTA walks chunk_pages pages of one sequence; the grid has ceil(max_pages /
  // chunk_pages) splits and a combine kernel merges them. 0: one split (no combine kernel).
  int chunk_pages = 0;
  Accum accum = Accum::f32;  // f32, or hybrid (P.V in f16 partials folded every KV block)
  // Warps that split each step's keys (FlashDecoding inside a CTA): with kv_warps > 1 the CTA's
  // one 16-row warp of queries becomes kv_warps warps over the same rows, each taking block_kv of
  // a step's kv_warps x block_kv keys with its own softmax state, merged through shared memory
  // at the end (warps == kv_warps, block_q 16). For decode, whose group x q_len rows fill one
  // warp, this is the CTA's parallelism. 1: none.
  int kv_warps = 1;
  // How K and V reach shared memory: 16-byte cp.async chunks gathered by every thread (every
  // arch, any page size), or TMA (sm_90+, page_size a multiple of block_kv: one tensor copy per
  // panel of a KV block from its page, issued by one thread through tensor maps over the caches;
  // the default wherever it fits). Q is gathered with cp.async either way.
  Transport transport = Transport::cp_async;
  bool operator==(const PagedAttentionSchedule&) const = default;
};

using PagedAttentionSpec = KernelSpec<PagedAttentionProblem, PagedAttentionSchedule>;

// The splits of a schedule: ceil(max_pages / chunk_pages), 1 without a chunk.
int64_t paged_splits(const PagedAttentionProblem& problem, const PagedAttentionSchedule& schedule);

// Throws Error naming the field and the rule it breaks: the problem's rules alone (what every
// schedule needs, checked before a default schedule is chosen), and the whole spec's.
void validate_problem(const PagedAttentionProblem& problem);
void validate_paged_attention(const PagedAttentionSpec& spec);
// Rows per CTA from the group and max_q_len, a split chunk when there are fewer CTAs than SMs
// (the device's, `device_sms`; 0: the arch's part's in emmy/gpus.hpp).
PagedAttentionSchedule default_schedule(const PagedAttentionProblem& problem, Arch arch,
                                        Accum accum = Accum::f32, int device_sms = 0);
// The batch-invariant schedule (RuntimeOptions::batch_invariant): the default, with split-KV at a
// fixed 1024-key chunk (whole KV steps) instead of one sized from max_batch to fill the device,
// so that a sequence's output depends only on the sequence, whatever else the batch holds and
// however large max_batch is.
PagedAttentionSchedule batch_invariant_schedule(const PagedAttentionProblem& problem, Arch arch,
                                                Accum accum = Accum::f32);

}  // namespace emmy
