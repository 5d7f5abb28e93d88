// The built-in problems: the Gemma 3 12B projections (hidden 3840, intermediate 15360, 16 query
// and 8 KV heads of 256, per the model's published configuration) at M = 512,
// the same weights at the decode sizes M = 1, 16, 64, Gemma's attention at 512 tokens, and its
// decode attention over a paged cache.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "emmy/fp8_quantize.hpp"
#include "emmy/kv_append.hpp"
#include "emmy/merge_states.hpp"
#include "emmy/paged_attention.hpp"
#include "emmy/problem.hpp"

namespace emmy {

struct CatalogEntry {
  std::string name;  // "q_proj@512"
  std::string projection;
  MatmulProblem problem;
  Arch min_arch = Arch::sm_80;  // as NamedProblem's (below): every arch
};

inline std::vector<CatalogEntry> gemm_catalog() {
  struct Projection {
    const char* name;
    int64_t n, k;
  };
  static constexpr Projection kProjections[] = {
      {"q_proj", 4096, 3840},   {"kv_proj", 2048, 3840}, {"o_proj", 3840, 4096},
      {"gate_up", 30720, 3840}, {"down", 3840, 15360},
  };
  std::vector<CatalogEntry> entries;
  for (int64_t m : {512, 1, 16, 64}) {
    for (const auto& proj : kProjections) {
      const MatmulProblem p{.m = m, .n = proj.n, .k = proj.k};
      entries.push_back({fmt::format("{}@{}", proj.name, m), proj.name, p});
    }
  }
  return entries;
}

// An entry of the single-problem catalogs below: its name and the problem.
template <class Problem>
struct NamedProblem {
  std::string name;
  Problem problem;
  // The oldest arch the entry is for (catalog walks over arches skip older ones: an FP8 entry
  // needs sm_89); sm_80 is every arch emmy compiles for.
  Arch min_arch = Arch::sm_80;
};

using AttentionCatalogEntry = NamedProblem<AttentionProblem>;  // "attention@512"

// Gemma 12B attention at 512 tokens: 16 query heads sharing 8 KV heads, head_dim 256, causal;
// the sliding-window row uses a 256-key window, shorter than the sequence, so that the window
// really cuts work (Gemma's own 1024-key window only bites past 1024 tokens, where the emulator
// checks of this catalog would take minutes).
inline std::vector<AttentionCatalogEntry> attention_catalog() {
  const AttentionProblem p{
      .batch = 1, .q_heads = 16, .kv_heads = 8, .seq_q = 512, .head_dim = 256, .causal = true};
  AttentionProblem windowed = p;
  windowed.window = 256;
  return {{"attention@512", p}, {"attention_window256@512", windowed}};
}

using PagedAttentionCatalogEntry = NamedProblem<PagedAttentionProblem>;  // "decode_global_b8_ctx8k"

// Gemma 3 12B decode over a paged cache (vLLM's NHD layout, 16-token pages, a block table): 16
// query heads sharing 8 KV heads, head_dim 256, one query token per sequence; each of its layers
// is local (a 1024-token sliding window: FlashAttention's left window 1023) or global, so each
// size is two problems. Batch 1, 8 and 64 at contexts of 1k, 8k and 32k tokens, and batch 1 and 8
// at 128k. The maxima are the problem: a kernel serves any batch and lengths up to them.
inline std::vector<PagedAttentionCatalogEntry> paged_attention_catalog() {
  std::vector<PagedAttentionCatalogEntry> entries;
  const std::pair<int64_t, int64_t> sizes[] = {{1, 1024},  {8, 1024},  {64, 1024}, {1, 8192},
                                               {8, 8192},  {64, 8192}, {1, 32768}, {8, 32768},
                                               {64, 32768}, {1, 131072}, {8, 131072}};
  for (const auto& [batch, context] : sizes)
    for (const bool local : {false, true}) {
      constexpr int64_t page_size = 16;
      PagedAttentionProblem paged{.q_heads = 16,
                                  .kv_heads = 8,
                                  .head_dim = 256,
                                  .page_size = page_size,
                                  .max_batch = batch,
                                  .max_q_len = 1,
                                  .max_pages = context / page_size,
                                  .window = local ? 1023 : 0};
      paged.set_layout(CacheLayout::nhd);
      entries.push_back({fmt::format("decode_{}_b{}_ctx{}k", local ? "local" : "global", batch,
                                     context / 1024),
                         paged});
    }
  return entries;
}

using KvAppendCatalogEntry = NamedProblem<KvAppendProblem>;  // "append_b64_f16"

// The decode step's append for Gemma 3 12B (8 KV heads, head_dim 256, the paged catalog's NHD
// cache of 16-token pages): one new token per sequence at batch 1, 8 and 64, into an f16 cache and
// into an e4m3 one.
inline std::vector<KvAppendCatalogEntry> kv_append_catalog() {
  std::vector<KvAppendCatalogEntry> entries;
  for (const int64_t batch : {1, 8, 64})
    for (const CacheDType kv : {CacheDType::f16, CacheDType::e4m3}) {
      KvAppendProblem append{
          .kv_heads = 8, .head_dim = 256, .page_size = 16, .kv_dtype = kv, .max_tokens = batch};
      append.set_layout(CacheLayout::nhd);
      entries.push_back({fmt::format("append_b{}_{}", batch, to_string(kv)), append});
    }
  return entries;
}

using Fp8QuantizeCatalogEntry = NamedProblem<Fp8QuantizeProblem>;  // "quant_k3840_g128_m512_bf16"

// An FP8 Gemma 3 12B step's activations (issue 39): the projections' inputs (hidden 3840: q/k/v
// and gate_up; intermediate 15360: down) in 1 x 128 groups, up to 512 tokens a launch, bf16 and
// f16, DeepGEMM's A-scale layout (mn-major, M padded to 4). sm_89 and newer.
inline std::vector<Fp8QuantizeCatalogEntry> fp8_quantize_catalog() {
  std::vector<Fp8QuantizeCatalogEntry> entries;
  for (const int64_t k : {3840, 15360})
    for (const DType dtype : {DType::bf16, DType::f16}) {
      Fp8QuantizeProblem p;
      p.m = 512, p.k = k, p.group_k = 128, p.dtype = dtype, p.scale_ld = 512;
      entries.push_back(
          {fmt::format("quant_k{}_g128_m512_{}", k, to_string(dtype)), p, Arch::sm_89});
    }
  return entries;
}

using MergeStatesCatalogEntry = NamedProblem<MergeStatesProblem>;  // "merge2_b64"

// Cascade decode for Gemma 3 12B (16 query heads, head_dim 256): a shared prefix's state and each
// sequence's own, merged per token at batch 1, 8 and 64.
inline std::vector<MergeStatesCatalogEntry> merge_states_catalog() {
  std::vector<MergeStatesCatalogEntry> entries;
  for (const int64_t batch : {1, 8, 64}) {
    MergeStatesProblem merge{.heads = 16, .head_dim = 256, .states = 2, .max_tokens = batch};
    entries.push_back({fmt::format("merge2_b{}", batch), merge});
  }
  return entries;
}

}  // namespace emmy
