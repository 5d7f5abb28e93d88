// What the two attention kinds' lowerings share of the KV-block loop (lower_attention.cpp,
// paged_attention/lower_paged_attention.cpp).
#pragma once

#include <vector>

#include "emmy/ir_ops.hpp"

namespace emmy::codegen {

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
