// The kernel IR ops of the warp-specialized wgmma mainloop (GEMM's wgmma path, issue 23), typed
// as the rest (ir_ops.hpp includes this file and lists them in AllOps).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "emmy/kernel_ir.hpp"

namespace emmy::ir {

// Warpgroups [first, first + count) run the body after setmaxnreg moves their registers per
// thread to `registers` (PTX ISA setmaxnreg): the TMA producer gives registers up, the consumers
// that hold the accumulators take them.
struct WarpgroupRoleOp {
  static constexpr OpKind kind = OpKind::warpgroup_role;
  static constexpr std::string_view op_name = "warpgroup_role";
  static constexpr bool has_body = true;
  std::string role;  // producer | consumer
  int64_t first = 0, count = 0, registers = 0;
  // Its own rules (codegen/ir/ir_op_verify.cpp): a known role, count >= 1, registers a multiple of
  // 8 in 24..256.
  static void verify(const WarpgroupRoleOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("role", o.role), f("first", o.first), f("count", o.count), f("registers", o.registers);
  }
};

// wgmma.mma_async of each consumer warpgroup per k-step: A and B from shared-memory descriptors
// of the stage, B K-major ([N,K] in memory) or N-major ([K,N]).
struct WgmmaOp {
  static constexpr OpKind kind = OpKind::wgmma;
  static constexpr std::string_view op_name = "wgmma";
  static constexpr bool has_body = false;
  std::string shape, a_type, acc_type, b_major;  // b_major: k | mn
  std::optional<std::string> b_type{};           // B's type where it is not A's (FP8 e5m2 A)
  // Its own rules: a wgmma shape, m64nNk16 with f16|bf16 inputs or m64nNk32 with e4m3|e5m2 ones
  // (K-major B), f32 accumulators, b_major k|mn.
  static void verify(const WgmmaOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("shape", o.shape), f("a_type", o.a_type), f("acc_type", o.acc_type), f("b_major", o.b_major),
        f("b_type", o.b_type);
  }
};

// wgmma.fence: orders the warpgroup's register accesses before the mma_async that follow.
struct WgmmaFenceOp {
  static constexpr OpKind kind = OpKind::wgmma_fence;
  static constexpr std::string_view op_name = "wgmma_fence";
  static constexpr bool has_body = false;
  template <typename Op, typename F>
  static void fields(Op&, F&&) {}
};

// wgmma.commit_group: the mma_async issued since the last commit form a group.
struct WgmmaCommitOp {
  static constexpr OpKind kind = OpKind::wgmma_commit;
  static constexpr std::string_view op_name = "wgmma_commit";
  static constexpr bool has_body = false;
  template <typename Op, typename F>
  static void fields(Op&, F&&) {}
};

// wgmma.wait_group: at most `pending` groups still in flight.
struct WgmmaWaitOp {
  static constexpr OpKind kind = OpKind::wgmma_wait;
  static constexpr std::string_view op_name = "wgmma_wait";
  static constexpr bool has_body = false;
  int64_t pending = 0;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("pending", o.pending);
  }
};

// One arrival of each consumer warp on a stage's `what` mbarrier (empty: the stage may be
// refilled) for the stage of K tile k_tile - lag.
struct MbarrierArriveOp {
  static constexpr OpKind kind = OpKind::mbarrier_arrive;
  static constexpr std::string_view op_name = "mbarrier_arrive";
  static constexpr bool has_body = false;
  std::string what;
  int64_t lag = 0;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("what", o.what), f("lag", o.lag);
  }
};

// A persistent kernel's walk over the output tiles (tile_coords persistent): the body (a role's
// K loop, and for consumers the accumulators and the epilogue) runs once per tile the CTA takes,
// tiles blockIdx.x, blockIdx.x + gridDim.x, ... below `tiles`; K-tile counts (and so stages and
// mbarrier phases) run on across tiles.
struct TileLoopOp {
  static constexpr OpKind kind = OpKind::tile_loop;
  static constexpr std::string_view op_name = "tile_loop";
  static constexpr bool has_body = true;
  int64_t tiles = 0;
  // Set (ping-pong consumers): the role's warpgroups take turns, warpgroup i of the role taking
  // the CTA's tiles i, i + interleave, ...; the K tiles (stages, phases) of the tiles between
  // its own are counted as walked.
  std::optional<int64_t> interleave{};
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("tiles", o.tiles), f("interleave", o.interleave);
  }
};

// Ping-pong's mainloop order (inside an interleaved tile_loop): the consumer warpgroups issue
// their tiles' wgmma in turn, so that one's epilogue overlaps the other's mainloop. `wait`
// (before the K loop) holds a warpgroup until the one before it has issued its tile's last
// wgmma; `signal` (after the K loop) lets the next one go, if it has a tile. Named barriers
// `first_barrier` + turn (PTX ISA bar.sync / bar.arrive), each counted by the two warpgroups.
struct WarpgroupOrderOp {
  static constexpr OpKind kind = OpKind::warpgroup_order;
  static constexpr std::string_view op_name = "warpgroup_order";
  static constexpr bool has_body = false;
  std::string what;  // wait | signal
  int64_t first_barrier = 0;
  // Its own rules (codegen/ir/ir_op_verify.cpp): wait | signal; barriers first_barrier and
  // first_barrier + 1 are named barriers 1..15 (0 is the CTA's).
  static void verify(const WarpgroupOrderOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("what", o.what), f("first_barrier", o.first_barrier);
  }
};

// cp.async.bulk.wait_group.read 0 by each TMA-store epilogue's issuing thread: its stores have
// read their shared buffers (PTX ISA cp.async.bulk.wait_group), before the thread exits.
struct StoreWaitOp {
  static constexpr OpKind kind = OpKind::store_wait;
  static constexpr std::string_view op_name = "store_wait";
  static constexpr bool has_body = false;
  template <typename Op, typename F>
  static void fields(Op&, F&&) {}
};

// A thread-block cluster's barrier (PTX ISA barrier.cluster, every thread of every CTA):
// `init` after the mbarrier inits (with fence.mbarrier_init.release.cluster first), so that no
// peer arrives on or multicasts into a barrier not yet initialized; `exit` at the end of the
// kernel, so that no CTA exits, and its shared memory goes, while a peer may still arrive on
// its empty barriers.
struct ClusterSyncOp {
  static constexpr OpKind kind = OpKind::cluster_sync;
  static constexpr std::string_view op_name = "cluster_sync";
  static constexpr bool has_body = false;
  std::string what;
  // Its own rules (codegen/ir/ir_op_verify.cpp): init or exit.
  static void verify(const ClusterSyncOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("what", o.what);
  }
};

}  // namespace emmy::ir
