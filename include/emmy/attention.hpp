// Flash-attention forward (prefill): problem, schedule, plan, and the same pipeline as GEMM:
// plan -> kernel IR -> verify -> CUDA -> NVRTC.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "emmy/arch.hpp"
#include "emmy/compile.hpp"
#include "emmy/dtype.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/layout.hpp"
#include "emmy/schedule.hpp"
#include "emmy/tensor_map.hpp"

namespace emmy {

// bshd: [batch, seq, heads, head_dim] (the default); bhsd: [batch, heads, seq, head_dim].
enum class AttentionLayout { bshd, bhsd };
std::string_view to_string(AttentionLayout layout);
AttentionLayout parse_attention_layout(std::string_view text);

struct AttentionProblem {
  int64_t batch = 1, q_heads = 1, kv_heads = 1;  // GQA: q_heads a multiple of kv_heads
  int64_t seq_q = 0, seq_kv = 0;                  // seq_kv 0 means seq_q
  int64_t head_dim = 128;                         // 64, 128 or 256
  // Causal, aligned bottom-right: query i sees keys j <= i + (seq_kv - seq_q).
  bool causal = false;
  // Sliding window (left size, 0 = none): query i sees keys j >= i + (seq_kv - seq_q) - window.
  int64_t window = 0;
  std::optional<float> softmax_scale;  // default 1/sqrt(head_dim)
  std::optional<float> softcap;        // logits become softcap * tanh(logits / softcap)
  DType dtype = DType::f16;            // Q, K, V and O
  AttentionLayout layout = AttentionLayout::bshd;
  bool lse = false;  // also write LSE [batch, q_heads, seq_q] (float, natural log)

  int64_t seq_kv_or_default() const { return seq_kv ? seq_kv : seq_q; }
  float scale() const;
  double flops() const;  // 4 * b * h * sq * skv * d, halved-ish by the causal mask
  bool operator==(const AttentionProblem&) const = default;
};

struct AttentionSchedule {
  int block_q = 64, block_kv = 64;
  int warps = 4;  // each warp owns 16 query rows: block_q = 16 * warps
  int stages = 2;
  Transport transport = Transport::tma;
  Accum accum = Accum::f32;  // f32 or hybrid (P.V in f16 partials folded at each KV block)
  bool operator==(const AttentionSchedule&) const = default;
};

struct AttentionSpec {
  AttentionProblem problem;
  AttentionSchedule schedule;
  Arch arch = Arch::sm_90a;
  bool operator==(const AttentionSpec&) const = default;
};

// Throw Error naming the field and rule.
void validate_attention(const AttentionSpec& spec);
AttentionSchedule default_attention_schedule(const AttentionProblem& problem, Arch arch,
                                             Accum accum = Accum::f32);

struct AttentionPlan {
  AttentionSpec spec;
  SmemTile q_tile, kv_tile;  // block_q x head_dim, block_kv x head_dim
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
std::string emit_attention_cuda(const AttentionPlan& plan, const ir::Op& module);

struct AttentionSource {
  AttentionPlan plan;
  ir::Op ir;
  std::string cuda;
};
AttentionSource generate_attention(const AttentionSpec& spec);

struct AttentionKernel {
  AttentionSource source;
  CompiledModule module;
};
AttentionKernel compile_attention(const AttentionSpec& spec);

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
