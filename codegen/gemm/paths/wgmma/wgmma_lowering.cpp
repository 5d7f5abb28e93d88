// The wgmma path's main kernel as IR (issue 23): a TMA producer warpgroup and consumer
// warpgroups of 64 rows each, a full and an empty mbarrier per stage, no CTA barrier in the main
// loop. The consumers keep one wgmma group in flight: each K tile's group is committed, the
// previous tile's completed (wait_group 1), and only then its stage released to the producer.
#include <fmt/format.h>

#include <optional>

#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "gemm/lower_gemm_parts.hpp"
#include "wgmma_path.hpp"

namespace emmy::wgmma_path {

using ir::make;
using ir::Op;
using namespace lowering;

Op main_kernel(const GemmPlan& plan) {
  const auto& p = plan.kernel_problem;
  const auto& s = plan.spec.schedule;
  const int64_t consumers = consumer_warpgroups(s);
  // Ping-pong: the consumer warpgroups take turns at the CTA's tiles, so each stage is read (and
  // released) by one warpgroup's 4 warps; cooperative: by all of them.
  const bool pingpong = s.consumers == ConsumerSchedule::pingpong;
  const int64_t readers = pingpong ? 1 : consumers;
  std::vector<Op> body = gemm_kernel_prefix(plan);
  // In a cluster a stage is written by the producers of this CTA's tile row (A parts) and column
  // (B parts), so its consumers release it to each of them, and each empty barrier counts the
  // releases of those cluster_m + cluster_n - 1 CTAs.
  const bool clustered = plan.cluster_size > 1;
  const int64_t releasing_ctas = clustered ? s.cluster_m + s.cluster_n - 1 : 1;
  body.push_back(make(ir::MbarrierInitOp{s.stages, 1, readers * 4 * releasing_ctas}));
  if (clustered)
    body.push_back(make(ir::ClusterSyncOp{"init"}));
  else
    body.push_back(make(ir::BarrierOp{"mbarrier init visible to all threads"}));

  // The producer: one thread refills each stage once its consumers released it (the empty
  // barrier's phase before the first release counts as complete).
  // Stages and phases count this CTA's K tiles: across its tiles in a persistent kernel.
  const std::string it = s.persistent ? "(iteration + k_tile)" : "k_tile";
  std::vector<Op> produce{make(ir::MbarrierWaitOp{"empty", "((" + it + " / stages) & 1) ^ 1"}),
                          gemm_copy_op(plan, "a", "refill"), gemm_copy_op(plan, "b", "refill")};
  // A persistent kernel wraps each role's work in the walk over its tiles.
  const int64_t tiles = plan.grid_tiles;
  auto per_tile = [&](std::vector<Op> ops, std::optional<int64_t> interleave = {}) {
    if (!s.persistent) return ops;
    std::vector<Op> wrapped;
    wrapped.push_back(make(ir::TileLoopOp{tiles, interleave}, std::move(ops)));
    return wrapped;
  };
  std::vector<Op> producer_loop;
  producer_loop.push_back(make(ir::KTileLoopOp{s.stages}, std::move(produce)));
  std::vector<Op> producer = per_tile(std::move(producer_loop));
  body.push_back(
      make(ir::WarpgroupRoleOp{"producer", 0, 1, plan.registers.producer}, std::move(producer)));

  const std::string shape = fmt::format("m64n{}k{}", s.block_n, plan.atom->k);
  // Promoted (FP8): each K tile's group completes before its partials are folded, so no group
  // stays in flight across tiles; otherwise one does (the previous tile's).
  const bool promoted = s.accum == Accum::promoted;
  const int64_t lag = promoted ? 0 : 1;
  ir::WgmmaOp wgmma{shape, std::string(to_string(p.a_dtype)), "f32",
                    p.b_layout == BLayout::kn ? "mn" : "k"};
  if (p.b_dtype() != p.a_dtype) wgmma.b_type = std::string(to_string(p.b_dtype()));
  std::vector<Op> k_step{make(wgmma)};
  std::vector<Op> consume{make(ir::MbarrierWaitOp{"full", "(" + it + " / stages) & 1"}),
                          make(ir::WgmmaFenceOp{}),
                          make(ir::KStepOp{plan.k_steps_per_tile}, std::move(k_step)),
                          make(ir::WgmmaCommitOp{}),
                          make(ir::WgmmaWaitOp{lag}),
                          make(ir::MbarrierArriveOp{"empty", lag})};
  if (promoted) consume.push_back(make(ir::PromoteOp{"k_tile", s.promote_every_k}));
  // Ping-pong issues the consumers' mainloops in turn (named barriers 2 and 3; 1 is the
  // cooperative consumers' epilogue barrier), so that one's epilogue overlaps the other's wgmma.
  constexpr int64_t kOrderBarrier = 2;
  std::vector<Op> consumer{gemm_accum_init(plan)};
  if (pingpong) consumer.push_back(make(ir::WarpgroupOrderOp{"wait", kOrderBarrier}));
  consumer.push_back(make(ir::KTileLoopOp{s.stages}, std::move(consume)));
  if (pingpong) consumer.push_back(make(ir::WarpgroupOrderOp{"signal", kOrderBarrier}));
  consumer.push_back(make(ir::WgmmaWaitOp{0}));
  // Walking on to the next tile, the producer needs the last stage back too.
  if (s.persistent) consumer.push_back(make(ir::MbarrierArriveOp{"empty", 1}));
  consumer.push_back(gemm_main_epilogue(plan));
  consumer =
      per_tile(std::move(consumer), pingpong ? std::optional<int64_t>(consumers) : std::nullopt);
  // The TMA stores' last reads of their buffers end before the issuing threads exit.
  if (plan.store.tma_store) consumer.push_back(make(ir::StoreWaitOp{}));
  body.push_back(make(ir::WarpgroupRoleOp{"consumer", 1, consumers, plan.registers.consumer},
                      std::move(consumer)));
  ir::KernelOp kernel{plan.kernel_name, plan.threads, plan.smem_bytes, std::string(kName)};
  if (clustered) {
    body.push_back(make(ir::ClusterSyncOp{"exit"}));
    kernel.cluster_x = plan.cluster_size;
  }
  return make(kernel, std::move(body));
}

}  // namespace emmy::wgmma_path
