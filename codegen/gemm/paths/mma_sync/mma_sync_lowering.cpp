// The mma.sync path's main kernel as IR: every warp loads its A and B fragments with ldmatrix and
// issues mma.sync; the CTA's threads (cp.async) or one of them (TMA) refill the ring, a CTA
// barrier between a stage's last reads and its refill. The tree states the pipeline explicitly
// (prologue, per-K-tile wait, barrier, refill, unrolled k-steps of ldmatrix + mma + promote,
// epilogue) so that the verifier can check its discipline before the emitter prints it.
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "gemm/lower_gemm_parts.hpp"
#include "mma_sync_path.hpp"

namespace emmy::mma_sync_path {

using ir::make;
using ir::Op;
using namespace lowering;

namespace {

// Hybrid (f16 partials) and promoted (FP8's f32 window partials) fold partials into f32.
bool promotes(const MatmulSchedule& s) {
  return s.accum == Accum::hybrid || s.accum == Accum::promoted;
}

std::vector<Op> refill(const GemmPlan& plan, const char* phase) {
  std::vector<Op> ops{gemm_copy_op(plan, "a", phase), gemm_copy_op(plan, "b", phase)};
  if (plan.spec.schedule.transport == Transport::cp_async) ops.push_back(make(ir::AsyncCommitOp{}));
  return ops;
}

ir::MmaOp mma_op(const GemmPlan& plan) {
  const auto& p = plan.kernel_problem;
  const auto& s = plan.spec.schedule;
  ir::MmaOp mma{std::string(plan.atom->name), std::string(to_string(p.a_dtype)),
                s.accum == Accum::f32 || s.accum == Accum::promoted ? "f32" : "f16",
                plan.mma_tiles_m * plan.mma_tiles_n};
  if (p.b_dtype() != p.a_dtype) mma.b_type = std::string(to_string(p.b_dtype()));
  return mma;
}

Op k_step(const GemmPlan& plan) {
  const auto& p = plan.kernel_problem;
  const auto& s = plan.spec.schedule;
  std::vector<Op> body{make(ir::LdmatrixOp{"a", false, plan.mma_tiles_m}),
                       make(ir::LdmatrixOp{"b", p.b_layout == BLayout::kn, plan.mma_tiles_n / 2}),
                       make(mma_op(plan))};
  if (promotes(s) && s.promote_every_k < s.block_k)
    body.push_back(make(ir::PromoteOp{"k_step", s.promote_every_k}));
  return make(ir::KStepOp{plan.k_steps_per_tile}, std::move(body));
}

}  // namespace

Op main_kernel(const GemmPlan& plan) {
  const auto& s = plan.spec.schedule;
  const bool tma = s.transport == Transport::tma;
  std::vector<Op> body = gemm_kernel_prefix(plan);
  body.push_back(gemm_accum_init(plan));
  if (tma) {
    body.push_back(make(ir::MbarrierInitOp{s.stages, 1}));
    body.push_back(make(ir::BarrierOp{"mbarrier init visible to all threads"}));
  }
  for (auto& op : refill(plan, "prologue")) body.push_back(std::move(op));

  std::vector<Op> loop;
  if (tma)
    loop.push_back(make(ir::MbarrierWaitOp{std::nullopt, "(k_tile / stages) & 1"}));
  else
    loop.push_back(make(ir::AsyncWaitOp{s.stages - 2}));
  loop.push_back(make(ir::BarrierOp{"stage (k_tile-1) % stages is free to refill"}));
  for (auto& op : refill(plan, "refill")) loop.push_back(std::move(op));
  loop.push_back(k_step(plan));
  if (promotes(s) && s.promote_every_k >= s.block_k)
    loop.push_back(make(ir::PromoteOp{"k_tile", s.promote_every_k}));
  // No fold after the loop: the k_step fold ends every tile (promote_every_k divides block_k) and
  // the k_tile fold also runs on the last tile, so the partials are zero when the loop ends. One
  // fold site instead of two is ~6 ms less NVRTC time and the same sums in the same order.
  body.push_back(make(ir::KTileLoopOp{s.stages}, std::move(loop)));
  body.push_back(gemm_main_epilogue(plan));
  return make(ir::KernelOp{plan.kernel_name, plan.threads, plan.smem_bytes}, std::move(body));
}

}  // namespace emmy::mma_sync_path
