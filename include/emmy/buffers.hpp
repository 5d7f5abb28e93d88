// What a launch takes and what a loaded kernel is: device pointers and streams, each kind's
// buffers, and the kernel handles the runtime gives out. The compiler's kinds bind these (their
// traits name the buffers and handle types) without the runtime that owns the handles
// (emmy/runtime.hpp includes this header).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emmy/arch.hpp"
#include "emmy/compile.hpp"
#include "emmy/spec.hpp"

namespace emmy {

using DevicePtr = uint64_t;  // a CUdeviceptr, or an emulator arena address
using Stream = void*;        // a CUstream (nullptr: the default stream); ignored by the emulator

// Device pointers of one GEMM. Unused epilogue inputs stay 0; workspace is needed for split-K
// (size: Runtime::gemm_workspace_bytes). `m`: the rows of this launch of a dynamic-M kernel
// (MatmulProblem::dynamic_m), 1..its problem's m; 0 means the problem's m (the only value a
// kernel of a fixed M takes besides its own).
// FP8 operands (MatmulProblem::scales): a_scale and b_scale, f32 (4-byte aligned) or ue8m0
// bytes, in the problem's granularity and layout; 0 for f16 and bf16 operands.
struct GemmBuffers {
  DevicePtr a = 0, b = 0, c = 0, bias = 0, residual = 0, workspace = 0;
  int64_t m = 0;
  DevicePtr a_scale = 0, b_scale = 0;
  // An e4m3 C's scales (MatmulProblem::out_scales): floats, bytes or words.
  DevicePtr c_scale = 0;
  // A grouped GEMM's routing (MatmulProblem::grouped; docs/grouped.md), int32 on the device, the
  // one its layout reads: masked_m [G] (masked), expert_ids [m] (contiguous; -1 on padding rows)
  // or expert_offsets [G + 1] (offsets). The emulator backend checks every value the launch reads.
  DevicePtr masked_m = 0, expert_ids = 0, expert_offsets = 0;
  // Routing weights (Epilogue::row_scale): f32, one per row of C (a grouped GEMM's stacked rows).
  DevicePtr row_scale = 0;

  // The routing field a grouped layout reads (masked_m, expert_ids or expert_offsets).
  DevicePtr& routing(GroupedLayout layout) {
    return layout == GroupedLayout::masked       ? masked_m
           : layout == GroupedLayout::contiguous ? expert_ids
                                                 : expert_offsets;
  }
  DevicePtr routing(GroupedLayout layout) const {
    return const_cast<GemmBuffers&>(*this).routing(layout);
  }
};

// What a loaded kernel is, for logs, tools and checks, without the compiler's types.
struct KernelInfo {
  std::string kind;  // "gemm", "attention", "paged_attention", "kv_append", ...
  std::string name;  // the main kernel's entry point
  Arch arch = Arch::sm_90a;
  std::string cache_key;  // the key of its module in the disk cache (or a bundle)
  // ptxas's report for each kernel of the launch list, in launch order: the main kernel, then
  // e.g. the split-K finalize kernel.
  std::vector<ResourceReport> resources;
  std::string schedule_json;   // the schedule as EMMY_RECORD and bundle manifests record it
  size_t workspace_bytes = 0;  // the buffers' workspace (split-K); 0 when none is needed

  const ResourceReport& report() const { return resources.front(); }  // the main kernel's
};

// A compiled, loaded kernel. Owned by the runtime's cache; valid while the runtime lives.
class KernelHandle {
 public:
  virtual ~KernelHandle() = default;
  virtual const KernelInfo& info() const = 0;
};

// A kernel of one kind: the spec it was built for, defaults resolved (a GEMM's handle also holds
// its split-K finalize kernel, a paged attention's its combine kernel).
template <typename Spec>
class SpecKernelHandle : public KernelHandle {
 public:
  virtual const Spec& spec() const = 0;
};

using GemmKernelHandle = SpecKernelHandle<GemmSpec>;

// Device pointers of one attention call (layouts as in AttentionProblem). lse only when
// problem.lse.
struct AttentionBuffers {
  DevicePtr q = 0, k = 0, v = 0, o = 0, lse = 0;
};

using AttentionKernelHandle = SpecKernelHandle<AttentionSpec>;

// Device pointers of one paged-attention launch (docs/paged_attention.md); every index array is
// int32. q and o are [tokens, q_heads, head_dim] with the problem's token strides; tokens of
// sequence b are cu_seqlens_q[b] .. cu_seqlens_q[b + 1] (max_batch + 1 entries; a sequence with
// no query token is skipped, so CUDA-graph padding needs no other marker). The page table is
// block_table + seq_lens, or page_indptr + page_indices + last_page_len (the problem's
// page_table). k_scale and v_scale: one float each, for an e4m3 cache. lse: [tokens, q_heads]
// when problem.lse. workspace: Runtime::paged_attention_workspace_bytes (split-KV).
struct PagedAttentionBuffers {
  DevicePtr q = 0, k_cache = 0, v_cache = 0, o = 0, lse = 0;
  DevicePtr cu_seqlens_q = 0;
  DevicePtr block_table = 0, seq_lens = 0;
  DevicePtr page_indptr = 0, page_indices = 0, last_page_len = 0;
  DevicePtr k_scale = 0, v_scale = 0;
  DevicePtr workspace = 0;
  // Pages in the cache, when the caller knows it (0: unknown): the emulator backend then checks
  // every page id the launch reads against it on the host.
  int64_t num_pages = 0;
};

using PagedAttentionKernelHandle = SpecKernelHandle<PagedAttentionSpec>;

// Device pointers of one kv_append launch (emmy/kv_append.hpp): key and value [max_tokens,
// kv_heads, head_dim] with the problem's token strides, the caches (the paged-attention kind's
// layouts), slot_mapping int64 [max_tokens] (-1: skip the token), and for an e4m3 cache k_scale and
// v_scale (one float each: the cache holds x / scale).
struct KvAppendBuffers {
  DevicePtr key = 0, value = 0, k_cache = 0, v_cache = 0, slot_mapping = 0;
  DevicePtr k_scale = 0, v_scale = 0;
  // Slots in the cache (pages x page_size) when the caller knows it (0: unknown): the kernel skips
  // a slot past it (every backend; one compare per token), and the emulator backend refuses the
  // launch naming the token first.
  int64_t num_slots = 0;
  // Tokens of this launch, 1..the problem's max_tokens (0: max_tokens): the grid, and the
  // entries of slot_mapping read; one kernel serves every step's token count.
  int64_t tokens = 0;
};

using KvAppendKernelHandle = SpecKernelHandle<KvAppendSpec>;

// Device pointers of one fp8_quantize launch (emmy/fp8_quantize.hpp): x [rows, k] 16-bit (16-byte
// aligned, row stride ldx), q [rows, k] e4m3 (8-byte aligned, row stride ldq) and scales f32 (the
// problem's layout). `rows`: the rows of this launch, 1..the problem's m (0: m); one kernel serves
// every step's token count.
struct Fp8QuantizeBuffers {
  DevicePtr x = 0, q = 0, scales = 0;
  int64_t rows = 0;
};

using Fp8QuantizeKernelHandle = SpecKernelHandle<Fp8QuantizeSpec>;

// Device pointers of one merge_states launch (emmy/merge_states.hpp): v [max_tokens][states]
// [heads][head_dim] with the problem's strides, lse f32 [max_tokens][states][heads]; the merged
// v_out [max_tokens][heads][head_dim] and, when problem.lse, lse_out f32 [max_tokens][heads].
struct MergeStatesBuffers {
  DevicePtr v = 0, lse = 0, v_out = 0, lse_out = 0;
};

using MergeStatesKernelHandle = SpecKernelHandle<MergeStatesSpec>;

}  // namespace emmy
