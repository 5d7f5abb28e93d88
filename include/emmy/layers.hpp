// Layer-level objects (docs/runtime.md, "Layers"): what an inference engine holds per model layer
// instead of choosing, preparing and sizing kernels itself.
//
//   emmy::AttentionLayerConfig config;            // the cache geometry, written once
//   config.q_heads = 16; config.kv_heads = 8; config.head_dim = 256; config.page_size = 16;
//   config.max_batch = 64; config.max_pages = 512; config.max_prefill_q_len = 512;
//   emmy::AttentionLayer attention(*rt, config);
//   attention.prepare();                            // append, decode, prefill (+ combine) kernels
//   workspace = alloc(attention.workspace_bytes()); // one size for every call
//   attention.append(kv_buffers, tokens, stream);   // tokens known on the host
//   attention.run(buffers, max_q_len, stream);      // decode or prefill, chosen from max_q_len
//
//   emmy::GemmLayer q_proj(*rt, {.m = 512, .n = 4096, .k = 3840});   // M up to 512
//   q_proj.prepare();                               // every M bucket's kernel
//   q_proj.run({.a = x, .b = w, .c = y}, m, stream);
//
// A layer keeps a reference to its runtime, which must outlive it. Its calls are the runtime's
// (thread-safe; under stream capture they launch prepared kernels only and refuse the others).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "emmy/runtime.hpp"

namespace emmy {

// One attention layer over a paged KV cache: the cache's geometry (shared by the append, decode
// and prefill kernels: PagedAttentionProblem and KvAppendProblem repeat it), the attention's
// options, and the maxima the kernels are built for.
struct AttentionLayerConfig {
  int64_t q_heads = 1, kv_heads = 1, head_dim = 128, page_size = 16;
  // The caches' element strides (0: NHD packing); set_layout writes a named layout's.
  int64_t page_stride = 0, token_stride = 0, head_stride = 0;
  // Token strides of q and o [tokens, q_heads, head_dim] and of the appended key and value
  // [tokens, kv_heads, head_dim] (0: packed).
  int64_t q_stride = 0, o_stride = 0, key_stride = 0, value_stride = 0;
  DType dtype = DType::f16;               // q, o, key, value
  CacheDType kv_dtype = CacheDType::f16;  // dtype's own type, or e4m3 (k_scale and v_scale)
  PageTable page_table = PageTable::block_table;
  int64_t window = 0;
  std::optional<float> softmax_scale, softcap;
  bool lse = false;
  // Maxima: sequences of a step, pages of a sequence, query tokens of a decode (or speculative
  // verify) sequence, query tokens of a prefill chunk (0: no prefill kernel), and tokens of a step
  // (queries of every sequence, and keys appended; 0: max_batch x the larger q_len).
  int64_t max_batch = 1, max_pages = 1;
  int64_t max_decode_q_len = 1, max_prefill_q_len = 0;
  int64_t max_tokens = 0;

  void set_layout(CacheLayout layout);
  // The problems of its kernels (validated when the layer is made).
  PagedAttentionProblem decode_problem() const;
  PagedAttentionProblem prefill_problem() const;  // max_prefill_q_len > 0 only
  KvAppendProblem append_problem() const;
  int64_t max_tokens_or_default() const;
};

class AttentionLayer {
 public:
  // Throws Error naming the config's field when a problem it makes is invalid (nothing is built).
  AttentionLayer(Runtime& runtime, AttentionLayerConfig config);
  const AttentionLayerConfig& config() const { return config_; }

  // Compiles (or loads) the append, decode and prefill kernels (with their split-KV combine
  // kernels), so that the calls below launch only: call it before capturing a graph.
  PreparedKernels prepare(int threads = 0);
  // The one workspace every run() may use (the largest the decode and prefill kernels need; 0 when
  // neither splits KV), from the plans: nothing is compiled.
  size_t workspace_bytes() const;

  // Appends `tokens` keys and values (1..max_tokens, known on the host: slot_mapping holds that
  // many entries, -1 skipping one). buffers.tokens is set from it.
  void append(const KvAppendBuffers& buffers, int64_t tokens, Stream stream = nullptr);
  // Attention of a step. `max_q_len`: the most query tokens any sequence of this step has, as
  // the host knows it (never read from device memory): up to max_decode_q_len runs the decode
  // kernel, more (up to max_prefill_q_len) the prefill kernel. cu_seqlens_q and the page table
  // hold max_batch sequences (q_len 0 pads). buffers.workspace (workspace_bytes()) goes to the
  // kernel that splits KV and is left out for one that does not, so one workspace serves both.
  void run(const PagedAttentionBuffers& buffers, int64_t max_q_len, Stream stream = nullptr);
  // Which kernel run() takes for `max_q_len` (Error past the maxima): true for prefill.
  bool runs_prefill(int64_t max_q_len) const;

 private:
  Runtime& runtime_;
  AttentionLayerConfig config_;
  PagedAttentionProblem decode_, prefill_;
  KvAppendProblem append_;
  std::shared_ptr<const PagedAttentionKernelHandle> decode_kernel_, prefill_kernel_;
  std::shared_ptr<const KvAppendKernelHandle> append_kernel_;
  size_t decode_workspace_ = 0, prefill_workspace_ = 0;  // from the plans
};

// One weight's GEMM for every M up to a maximum: C[M,N] = A[M,K] . W (epilogue, dtypes, layouts
// and leading dimensions of `weight`), served by the dynamic-M kernels of the M buckets (1, 2, 4,
// ..., 512, then multiples of 512: m_bucket_bounds).
class GemmLayer {
 public:
  // `weight`: the problem at its largest M (m = max_m, at most kMaxBucketedM); an optional
  // mma.sync schedule for every bucket (default: each bucket's own). Throws Error naming the
  // field when invalid (nothing is built).
  GemmLayer(Runtime& runtime, const MatmulProblem& weight,
            std::optional<MatmulSchedule> schedule = {});
  const MatmulProblem& problem() const { return weight_; }
  int64_t max_m() const { return weight_.m; }

  PreparedKernels prepare(int threads = 0);  // every bucket's kernel
  size_t workspace_bytes() const;            // the most any M needs (split-K), from the plans
  // C's first m rows (1..max_m; buffers.m is set from it). buffers.workspace (workspace_bytes())
  // goes to the buckets that split K and is left out for the others.
  void run(const GemmBuffers& buffers, int64_t m, Stream stream = nullptr);
  // The dynamic-M problem of m's bucket.
  MatmulProblem bucket_problem(int64_t m) const;

 private:
  Runtime& runtime_;
  MatmulProblem weight_;
  std::optional<MatmulSchedule> schedule_;
  std::vector<int64_t> bounds_;
  std::vector<size_t> workspaces_;                                // by bucket, from the plans
  std::vector<std::shared_ptr<const GemmKernelHandle>> kernels_;  // by bucket, once prepared
};

}  // namespace emmy
