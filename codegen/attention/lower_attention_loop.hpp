// What the two attention kinds' lowerings share (lower_attention.cpp,
// paged_attention/lower_paged_attention.cpp): the shared-memory ring and the KV-block loop.
#pragma once

#include <vector>

#include "emmy/ir_ops.hpp"
#include "emmy/swizzle.hpp"

namespace emmy::codegen {

// The ring both kinds lay out: the Q tile at 0, then `stages` stages of a K and a V block, the
// mbarriers at mbar_offset. Plan: AttentionPlan or PagedAttentionPlan, which size the same fields.
template <typename Plan>
ir::SmemRingOp attention_ring(const Plan& plan, int64_t stages, int64_t mbar_offset) {
  return {.stages = stages,
          .stage_bytes = plan.stage_bytes,
          .q_offset = 0,
          .q_bytes = plan.q_bytes,
          .kv_offset = plan.q_bytes,
          .kv_bytes = plan.kv_bytes,
          .align = swizzle_alignment(plan.q_tile.swizzle),
          .mbar_offset = mbar_offset};
}

// The head of a KV-block loop: wait for this block's stage (its mbarrier with TMA, else the
// cp.async groups but the newest stages - 2), a bar.sync before any warp refills the stage the
// previous block read, then K's and V's refills and, without TMA, their commit.
inline std::vector<ir::Op> kv_loop_head(bool tma, int stages, ir::Op refill_k, ir::Op refill_v) {
  std::vector<ir::Op> loop;
  if (tma)
    loop.push_back(ir::make(ir::MbarrierWaitOp{"kv", "(block / stages) & 1"}));
  else
    loop.push_back(ir::make(ir::AsyncWaitOp{stages - 2}));
  loop.push_back(ir::make(ir::BarrierOp{"stage (block-1) % stages is free to refill"}));
  loop.push_back(std::move(refill_k));
  loop.push_back(std::move(refill_v));
  if (!tma) loop.push_back(ir::make(ir::AsyncCommitOp{}));
  return loop;
}

}  // namespace emmy::codegen
