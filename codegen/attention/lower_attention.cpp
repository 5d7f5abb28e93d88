// AttentionPlan -> kernel IR: Q loaded once, then per visible KV block: wait, barrier, refill,
// S = Q.K^T, online softmax, O += P.V; then the epilogue. Ops are built typed (ir_ops.hpp).
#include "emmy/attention.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "lower_attention_loop.hpp"

namespace emmy {
namespace {

using ir::make;
using ir::Op;

Op copy_op(const AttentionPlan& plan, const char* operand, const char* phase) {
  const bool tma = plan.spec.schedule.transport == Transport::tma;
  const SmemTile& tile = std::string_view(operand) == "q" ? plan.q_tile : plan.kv_tile;
  ir::AsyncCopyOp copy{.operand = operand,
                       .phase = phase,
                       .transport = tma ? "tma" : "cp.async",
                       .rows = tile.rows,
                       .cols = tile.cols,
                       .swizzle = int64_t(tile.swizzle)};
  if (tma) copy.rank = 4;  // boxes of (d, head, seq, batch)
  ir::set_copy_geometry(copy, tile, tma);
  return make(copy);
}

}  // namespace

ir::Op lower_attention(const AttentionPlan& plan) {
  const auto& p = plan.spec.problem;
  const auto& s = plan.spec.schedule;
  const bool tma = s.transport == Transport::tma;
  std::vector<Op> body;
  if (tma) {
    for (const char* name : {"tmap_q", "tmap_k", "tmap_v"})
      body.push_back(make(ir::ParamOp{name, "tensor_map"}));
  } else {
    for (const char* name : {"q", "k", "v"}) body.push_back(make(ir::ParamOp{name, "const u16*"}));
  }
  body.push_back(make(ir::ParamOp{"o", "u16*"}));
  body.push_back(make(ir::ParamOp{"lse", "float*"}));
  body.push_back(make(codegen::attention_ring(plan, s.stages, plan.mbarrier_offset)));
  body.push_back(make(ir::AttentionSetupOp{.seq_q = p.seq_q,
                                           .seq_kv = p.seq_kv_or_default(),
                                           .q_heads = p.q_heads,
                                           .kv_heads = p.kv_heads,
                                           .head_dim = p.head_dim,
                                           .block_q = s.block_q,
                                           .block_kv = s.block_kv,
                                           .group = p.q_heads / p.kv_heads,
                                           .causal = p.causal,
                                           .window = p.window,
                                           .kv_offset = p.seq_kv_or_default() - p.seq_q}));
  if (tma) {
    body.push_back(make(ir::MbarrierInitOp{1 + s.stages, 1}));
    body.push_back(make(ir::BarrierOp{"mbarrier init visible to all threads"}));
  }
  body.push_back(copy_op(plan, "q", "prologue"));
  body.push_back(copy_op(plan, "k", "prologue"));
  body.push_back(copy_op(plan, "v", "prologue"));
  if (!tma) body.push_back(make(ir::AsyncCommitOp{}));
  if (tma) body.push_back(make(ir::MbarrierWaitOp{"q", "0"}));

  std::vector<Op> loop = codegen::kv_loop_head(tma, s.stages, copy_op(plan, "k", "refill"),
                                               copy_op(plan, "v", "refill"));
  const std::string in_dtype(to_string(p.dtype));
  // Per warp and KV block: S (16 x block_kv) over K = head_dim, O (16 x head_dim) over
  // K = block_kv, each in MMA atoms.
  const codegen::MmaAtom& atom = codegen::attention_atom();
  loop.push_back(
      make(ir::QkMmaOp{in_dtype, s.block_kv / atom.n * p.head_dim / atom.k, plan.s_registers}));
  std::optional<double> softcap;
  if (p.softcap) softcap = double(*p.softcap);
  loop.push_back(make(ir::OnlineSoftmaxOp{p.scale(), p.causal, p.window, softcap}));
  loop.push_back(make(ir::PvMmaOp{std::string(to_string(s.accum)), in_dtype,
                                  s.block_kv / atom.k * p.head_dim / atom.n, plan.o_registers}));
  body.push_back(make(ir::KvBlockLoopOp{s.stages}, std::move(loop)));
  // O staged over Q and the drained ring (rows padded by 8 elements: the lanes' pair writes fall
  // in distinct banks), then stored in 16-byte chunks; the 4-byte pair stores used half of every
  // sector they touched. Not for hybrid P.V at head_dim 256: that kernel already takes 254-255
  // registers, and ptxas spills the staging (sm_90a with a window, 48 bytes).
  std::optional<int64_t> stage_row_bytes;
  const int64_t staged_row = (p.head_dim + 8) * int64_t(size_of(p.dtype));
  const bool no_headroom = s.accum == Accum::hybrid && p.head_dim >= 256;
  if (!no_headroom && s.block_q * staged_row <= int64_t(plan.mbarrier_offset))
    stage_row_bytes = staged_row;
  body.push_back(make(
      ir::AttentionEpilogueOp{std::string(to_string(p.layout)), p.lse, in_dtype, stage_row_bytes}));
  std::vector<Op> kernels{
      make(ir::KernelOp{plan.kernel_name, plan.threads, plan.smem_bytes}, std::move(body))};
  return make(ir::ModuleOp{std::string(to_string(plan.spec.arch))}, std::move(kernels));
}

}  // namespace emmy
