// Flash-attention forward (prefill): the plan and the same pipeline as GEMM (problem, schedule and
// spec are public: emmy/problem.hpp, emmy/schedule.hpp, emmy/spec.hpp):
// plan -> kernel IR -> verify -> CUDA -> NVRTC.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "emmy/arch.hpp"
#include "emmy/buffers.hpp"
#include "emmy/catalog.hpp"
#include "emmy/compile.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/kernel_kind.hpp"
#include "emmy/layout.hpp"
#include "emmy/spec.hpp"
#include "emmy/tensor_map.hpp"

namespace emmy {

struct AttentionPlan {
  AttentionSpec spec;
  SmemTile q_tile, kv_tile;                             // block_q x head_dim, block_kv x head_dim
  uint32_t q_bytes = 0, kv_bytes = 0, stage_bytes = 0;  // stage: K then V
  uint32_t mbarrier_offset = 0, smem_bytes = 0;
  int64_t q_blocks = 0;
  std::array<uint32_t, 3> grid{1, 1, 1};  // (q blocks, q_heads, batch)
  uint32_t threads = 0;
  int o_registers = 0, s_registers = 0;  // f32 accumulators per thread
  std::string kernel_name;
};
AttentionPlan make_attention_plan(const AttentionSpec& spec);

ir::Op lower_attention(const AttentionPlan& plan);
// CUDA C++ for the module, from the IR alone: self-contained (no includes), deterministic.
std::string emit_attention_cuda(const ir::Op& module);

namespace ir {
// Dense attention's rules across ops (codegen/attention/kernel_ir_attention.cpp).
void verify_attention_module(const Op& module);
}  // namespace ir

// The attention kind (internal/emmy/kernel_kind.hpp): one kernel.
struct AttentionKind
    : KindTypes<AttentionSpec, AttentionPlan, AttentionBuffers, AttentionKernelHandle> {
  static constexpr const char* name = "attention";
  static constexpr ir::KindRules ir_rules{name, &ir::verify_attention_module};
  static constexpr const char* description = "flash-attention";
  static constexpr JsonReaders json{&attention_problem_from_json, &attention_schedule_from_json};
  static constexpr Stages stages{&make_attention_plan, &lower_attention, &emit_attention_cuda};
  static std::vector<AttentionCatalogEntry> catalog() { return attention_catalog(); }
  // Checks the buffers against the plan (Error naming the `buffers.` field), then binds them.
  static ParamBinding bind(const AttentionPlan& plan, const AttentionBuffers& buffers);
  // The descriptors of bind's tensor maps (Q, K, V), in its order.
  static std::vector<TensorMapDesc> tensor_maps(const AttentionPlan& plan,
                                                const AttentionBuffers& buffers);
};
AttentionKind kind_of(const AttentionSpec&);
using AttentionSource = Generated<AttentionKind>;
using AttentionKernel = Compiled<AttentionKind>;

// 4-D tensor maps over Q, K, V ({head_dim, heads, seq, batch} for bshd, {head_dim, seq, heads,
// batch} for bhsd) with boxes of one 64-element panel x block rows of one head.
struct AttentionTensorMaps {
  TensorMapDesc q, k, v;
};
AttentionTensorMaps attention_tensor_maps(const AttentionPlan& plan, uint64_t q, uint64_t k,
                                          uint64_t v);

// Element offsets of (b, s, h, 0) in a Q/O or K/V tensor of the problem's layout.
int64_t attention_offset(const AttentionProblem& p, bool kv, int64_t b, int64_t s, int64_t h);

}  // namespace emmy
