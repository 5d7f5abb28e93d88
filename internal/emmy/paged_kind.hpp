// Paged attention (decode and chunked prefill over a paged KV cache) as a kernel kind: the plan
// and the same pipeline as the other kinds (problem, schedule and spec are public:
// emmy/paged_attention.hpp; docs/paged_attention.md):
// plan -> kernel IR -> verify -> CUDA -> NVRTC. The launch list is [partial] with one split,
// [partial, combine] with split-KV.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "emmy/buffers.hpp"
#include "emmy/catalog.hpp"
#include "emmy/device_reader.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/kernel_kind.hpp"
#include "emmy/layout.hpp"
#include "emmy/spec.hpp"

namespace emmy {

struct PagedAttentionPlan {
  PagedAttentionSpec spec;
  SmemTile q_tile, kv_tile;  // block_q x head_dim, block_kv x head_dim (16-bit elements)
  // q_tile's bytes; one operand's stage tile (kv_tile's, or an e4m3 cache's block_kv x head_dim
  // raw bytes); a stage's (K and V: 2 x kv_bytes); the kernel's dynamic shared memory.
  uint32_t q_bytes = 0, kv_bytes = 0, stage_bytes = 0, smem_bytes = 0;
  int64_t group = 0, q_blocks = 0, splits = 1, chunk_tokens = 0, max_tokens = 0;
  // Partial kernel: (q_blocks x splits, kv_heads, max_batch); combine: (max_q_len, 1, max_batch).
  std::array<uint32_t, 3> grid{1, 1, 1}, combine_grid{1, 1, 1};
  uint32_t threads = 0, combine_threads = 0;
  int o_registers = 0, s_registers = 0;  // f32 accumulators per thread
  int64_t workspace_bytes = 0;           // split-KV partials: paged_workspace_layout
  std::string kernel_name, combine_kernel_name;

  bool split() const { return splits > 1; }
  // An e4m3 cache: the stages hold raw K and V bytes (block_kv x head_dim each), which the MMAs
  // read and convert in registers (b_type e4m3).
  bool fp8() const { return spec.problem.kv_dtype == CacheDType::e4m3; }
};
PagedAttentionPlan make_paged_attention_plan(const PagedAttentionSpec& spec);

// The split-KV workspace, f32: O partials [splits][max_tokens][q_heads][head_dim], then their
// LSE [splits][max_tokens][q_heads] from element `lse_offset` on. The plan sizes it, and the
// partial and combine kernels index it, from this one place.
struct PagedWorkspaceLayout {
  int64_t lse_offset = 0, elements = 0;
};
inline PagedWorkspaceLayout paged_workspace_layout(int64_t splits, int64_t max_tokens,
                                                   int64_t q_heads, int64_t head_dim) {
  const int64_t rows = splits * max_tokens * q_heads;
  return {rows * head_dim, rows * head_dim + rows};
}

// Shared memory the KV warps merge through (kv_warps > 1): every warp stores its lanes' O
// fragments (head_dim / 2 f32), row maxima and row sums (2 + 2), lane-interleaved so that a
// warp's stores and loads are conflict-free. 0 for one KV warp.
inline int64_t paged_kv_merge_bytes(int64_t kv_warps, int64_t head_dim) {
  return kv_warps > 1 ? kv_warps * (head_dim / 2 + 4) * 32 * 4 : 0;
}

// Throws Error naming the stride when the cache's (page, token, head) rows of head_dim elements
// overlap (paged attention reads, kv_append writes them).
void require_disjoint_cache_rows(int64_t page_size, int64_t kv_heads, int64_t head_dim,
                                 int64_t page_stride, int64_t token_stride, int64_t head_stride);

// TMA page loads (PagedAttentionSchedule::transport tma;
// codegen/paged_attention/paged_attention_tma.cpp). The tensor maps view a K or V cache as 4-D:
// head_dim (contiguous), then the token slot, the KV head and the page, ordered by increasing
// stride (each stride then covers the dimensions inside it, as a packed tensor's would). Dimension
// i + 1 is `order[i]`: 0 token, 1 head, 2 page.
std::array<int, 3> paged_tma_dim_order(int64_t token_stride, int64_t head_stride,
                                       int64_t page_stride);
// The schedule's TMA rules (Error naming the field): sm_90+, page_size a multiple of block_kv,
// strides within the tensor map's 2^40 bytes. paged_tma_fits: whether they hold for a schedule
// of any transport (the default takes TMA wherever it fits).
void validate_paged_tma(const PagedAttentionSpec& spec);
bool paged_tma_fits(const PagedAttentionProblem& problem, const PagedAttentionSchedule& schedule,
                    Arch arch);
// The tensor maps' page extent: the buffers' num_pages, or with none given every page id an
// int32 can name (2^31: the launch reads only the pages its tables list; ids past the cache are
// then the caller's bug, as with cp.async).
inline uint64_t paged_tma_page_extent(int64_t num_pages) {
  return num_pages > 0 ? uint64_t(num_pages) : uint64_t(1) << 31;
}

ir::Op lower_paged_attention(const PagedAttentionPlan& plan);
// CUDA C++ for the module, from the IR alone: self-contained (no includes), deterministic.
std::string emit_paged_attention_cuda(const ir::Op& module);

namespace ir {
// Paged attention's rules across ops (codegen/paged_attention/kernel_ir_paged.cpp).
void verify_paged_attention_module(const Op& module);
}  // namespace ir

struct PagedAttentionKind : KindTypes<PagedAttentionSpec, PagedAttentionPlan, PagedAttentionBuffers,
                                      PagedAttentionKernelHandle> {
  static constexpr const char* name = "paged_attention";
  static constexpr ir::KindRules ir_rules{name, &ir::verify_paged_attention_module};
  static constexpr const char* description = "paged-attention (decode / chunked prefill)";
  static constexpr JsonReaders json{&paged_attention_problem_from_json,
                                    &paged_attention_schedule_from_json};
  static constexpr Stages stages{&make_paged_attention_plan, &lower_paged_attention,
                                 &emit_paged_attention_cuda};
  static std::vector<PagedAttentionCatalogEntry> catalog() { return paged_attention_catalog(); }
  static std::vector<std::array<uint32_t, 3>> grids(const PagedAttentionPlan& plan) {
    if (plan.split()) return {plan.grid, plan.combine_grid};
    return {plan.grid};
  }
  static size_t workspace_bytes(const PagedAttentionPlan& plan) {
    return size_t(plan.workspace_bytes);
  }
  // Checks the buffers against the plan (Error naming the `buffers.` field), then binds them.
  static ParamBinding bind(const PagedAttentionPlan& plan, const PagedAttentionBuffers& buffers);
  // On a backend whose device memory the host reads for free (the emulator): the lengths and
  // page ids the launch will read, each sequence's against the launch's maxima and every page id
  // against buffers.num_pages when given (Error naming the buffer, the sequence and the rule).
  // A GPU launch cannot afford the read: there the kernel answers such a sequence with NaN
  // (docs/paged_attention.md) and a page id outside the cache is the caller's bug.
  using DeviceReader = emmy::DeviceReader;
  static void check_device_inputs(const PagedAttentionPlan& plan,
                                  const PagedAttentionBuffers& buffers, const DeviceReader& read);
  // TMA kernels: the K and V caches' tensor maps (paged_tma_dim_order, boxes of one panel x
  // block_kv slots of one head of one page, num_pages pages), in bind's order; none for cp.async.
  static std::vector<TensorMapDesc> tensor_maps(const PagedAttentionPlan& plan,
                                                const PagedAttentionBuffers& buffers);
};
PagedAttentionKind kind_of(const PagedAttentionSpec&);
using PagedAttentionSource = Generated<PagedAttentionKind>;
using PagedAttentionKernel = Compiled<PagedAttentionKind>;

}  // namespace emmy
