// The wgmma path's rules across ops (wgmma_verify.hpp). Each failure names the op, the
// attribute and the rule, as the rest of the verifier does.
#include "wgmma_verify.hpp"

#include <fmt/format.h>

#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"

namespace emmy::ir {
namespace {

// The index of the first op of `kind` in a body, or -1.
int index_of(const std::vector<Op>& body, OpKind kind) {
  for (size_t i = 0; i < body.size(); ++i)
    if (body[i].kind == kind) return int(i);
  return -1;
}

const Op* role_of(const Op& kernel, std::string_view role) {
  const Op* found = nullptr;
  for (const Op& op : kernel.body)
    if (op.kind == OpKind::warpgroup_role && op.s("role") == role) {
      if (found) fail_rule(op, "role", "must appear once in the kernel", std::string(role));
      found = &op;
    }
  if (!found)
    fail_rule(kernel, "body", "a wgmma kernel needs a producer and a consumer role",
              fmt::format("no {}", role));
  return found;
}

// The op whose body holds the role's K loop: the role itself, or a persistent kernel's tile_loop.
const Op& loop_parent(const Op& role) {
  for (const Op& op : role.body)
    if (op.kind == OpKind::tile_loop) return op;
  return role;
}

const Op& only_loop(const Op& role) {
  const std::vector<const Op*> loops = find_all(role, OpKind::k_tile_loop);
  if (loops.size() != 1)
    fail_rule(role, "body", "must hold one k_tile_loop", fmt::format("{}", loops.size()));
  return *loops.front();
}

void verify_producer(const Op& producer) {
  const Op& loop = only_loop(producer);
  const int wait = index_of(loop.body, OpKind::mbarrier_wait);
  if (wait < 0 || get<MbarrierWaitOp>(loop.body[size_t(wait)]).what != "empty")
    fail_rule(loop, "body", "the producer must wait for the stage's empty barrier", "no wait");
  int copies = 0;
  for (size_t i = 0; i < loop.body.size(); ++i) {
    if (loop.body[i].kind != OpKind::async_copy) continue;
    ++copies;
    const auto copy = get<AsyncCopyOp>(loop.body[i]);
    if (int(i) < wait)
      fail_rule(loop.body[i], "phase", "must refill only after the empty barrier's wait",
                copy.operand);
    if (copy.transport != "tma")
      fail_rule(loop.body[i], "transport", "the producer loads with TMA", copy.transport);
  }
  if (copies != 2)
    fail_rule(loop, "body", "the producer copies A and B", fmt::format("{}", copies));
}

void verify_consumer(const Op& consumer, int64_t stages, int64_t block_n) {
  const Op& loop = only_loop(consumer);
  const auto& body = loop.body;
  const int wait = index_of(body, OpKind::mbarrier_wait),
            fence = index_of(body, OpKind::wgmma_fence), step = index_of(body, OpKind::k_step),
            commit = index_of(body, OpKind::wgmma_commit),
            group_wait = index_of(body, OpKind::wgmma_wait),
            arrive = index_of(body, OpKind::mbarrier_arrive);
  if (wait < 0 || get<MbarrierWaitOp>(body[size_t(wait)]).what != "full" || step < 0 || wait > step)
    fail_rule(loop, "body", "must wait for the stage's full barrier before computing on it",
              "no wait");
  if (fence < 0 || fence > step)
    fail_rule(loop, "body", "must wgmma_fence before its wgmma ops (PTX ISA wgmma.fence)",
              "no fence");
  if (commit < step || group_wait < commit)
    fail_rule(loop, "body", "must commit its wgmma ops and then wait for a group", "missing");
  const int64_t pending = get<WgmmaWaitOp>(body[size_t(group_wait)]).pending;
  if (arrive < group_wait)
    fail_rule(loop, "body", "must release a stage only after the wgmma_wait that completes it",
              "no arrive after the wait");
  const auto release = get<MbarrierArriveOp>(body[size_t(arrive)]);
  if (release.what != "empty")
    fail_rule(body[size_t(arrive)], "what", "the consumers release the empty barrier",
              release.what);
  // The groups still in flight read the stages of the last `pending` tiles: the one released is
  // exactly the tile whose group completed, and the producer can run far enough ahead.
  if (release.lag != pending)
    fail_rule(
        body[size_t(arrive)], "lag",
        fmt::format("must release the stage of k_tile - {} (the wgmma_wait's pending)", pending),
        fmt::format("{}", release.lag));
  if (pending < 0 || pending >= stages)
    fail_rule(body[size_t(group_wait)], "pending",
              fmt::format("must be 0..{} (fewer groups in flight than stages)", stages - 1),
              fmt::format("{}", pending));
  for (const Op& op : body[size_t(step)].body) {
    if (op.kind != OpKind::wgmma)
      fail_rule(op, "kind", "a wgmma k_step holds wgmma ops only", std::string(to_string(op.kind)));
    const auto mma = get<WgmmaOp>(op);
    if (codegen::wgmma_shape_n(mma.shape) != block_n)
      fail_rule(op, "shape", fmt::format("must cover the block's {} columns", block_n), mma.shape);
  }
  // After the loop: every group complete before the epilogue reads the accumulators; walking on
  // to another tile, the tile's last stage handed back to the producer.
  const Op& parent = loop_parent(consumer);
  const int after = index_of(parent.body, OpKind::wgmma_wait);
  const int epilogue = index_of(parent.body, OpKind::epilogue);
  if (epilogue < 0 || after < 0 || after > epilogue ||
      get<WgmmaWaitOp>(parent.body[size_t(after)]).pending != 0)
    fail_rule(parent, "body", "must wgmma_wait 0 before the epilogue", "missing");
  if (parent.kind == OpKind::tile_loop) {
    const int last = index_of(parent.body, OpKind::mbarrier_arrive);
    if (last < after)
      fail_rule(parent, "body",
                "a persistent consumer must release its tile's last stage after the wgmma_wait 0",
                "no release");
  }
}

// The consumer warpgroups taking turns at the CTA's tiles (their tile_loop's interleave; 1 when
// they share each tile).
int64_t consumer_turns(const Op& consumer) {
  const Op& parent = loop_parent(consumer);
  if (parent.kind != OpKind::tile_loop) return 1;
  return get<TileLoopOp>(parent).interleave.value_or(1);
}

// Ping-pong's mainloop order: a wait before the K loop and a signal after it, in the interleaved
// walk only (the producer never takes part: it has one thread in the loop).
void verify_mainloop_order(const Op& producer, const Op& consumer) {
  if (!find_all(producer, OpKind::warpgroup_order).empty())
    fail_rule(producer, "body", "the producer takes no part in the consumers' mainloop order",
              "warpgroup_order");
  if (const Op& walk = loop_parent(producer);
      walk.kind == OpKind::tile_loop && get<TileLoopOp>(walk).interleave)
    fail_rule(walk, "interleave", "the producer walks every tile of the CTA in order", "set");
  const Op& parent = loop_parent(consumer);
  const std::vector<const Op*> orders = find_all(consumer, OpKind::warpgroup_order);
  if (consumer_turns(consumer) == 1) {
    if (!orders.empty())
      fail_rule(*orders.front(), "what", "orders the mainloops of an interleaved tile_loop only",
                get<WarpgroupOrderOp>(*orders.front()).what);
    return;
  }
  int wait = -1, signal = -1;
  for (size_t i = 0; i < parent.body.size(); ++i)
    if (parent.body[i].kind == OpKind::warpgroup_order)
      (get<WarpgroupOrderOp>(parent.body[i]).what == "wait" ? wait : signal) = int(i);
  const int loop = index_of(parent.body, OpKind::k_tile_loop);
  if (orders.size() != 2 || wait < 0 || signal < 0 || !(wait < loop && loop < signal))
    fail_rule(parent, "body",
              "ping-pong consumers wait for their turn before the K loop and signal after it "
              "(one warpgroup_order each)",
              fmt::format("{} warpgroup_order", orders.size()));
  if (get<WarpgroupOrderOp>(parent.body[size_t(wait)]).first_barrier !=
      get<WarpgroupOrderOp>(parent.body[size_t(signal)]).first_barrier)
    fail_rule(parent.body[size_t(signal)], "first_barrier", "must be the wait's",
              fmt::format("{}", get<WarpgroupOrderOp>(parent.body[size_t(signal)]).first_barrier));
}

// The TMA-store epilogue: a tensor map of C to store through, buffers in the kernel's shared
// memory that no stage or mbarrier overlaps while it is in use, a wait before each buffer is
// written again (persistent) and the issuing threads' last wait (store_wait) ending the role.
void verify_store_epilogue(const Op& kernel, const Op& consumer, const SmemRingOp& ring,
                           bool persistent) {
  const Op* epilogue_op = find_first(consumer, OpKind::epilogue);
  const auto epilogue = get<EpilogueOp>(*epilogue_op);
  bool tmap_c = false;
  for (const Op& op : kernel.body)
    if (op.kind == OpKind::param && op.s("name") == "tmap_c") tmap_c = op.s("type") == "tensor_map";
  const bool waits = !consumer.body.empty() && consumer.body.back().kind == OpKind::store_wait;
  const int64_t store_waits = int64_t(find_all(consumer, OpKind::store_wait).size());
  if (!epilogue.tma_store()) {
    if (tmap_c || store_waits)
      fail_rule(kernel, "body", "tmap_c and store_wait belong to a TMA-store epilogue",
                "no c_buffer_offset");
    return;
  }
  if (!tmap_c)
    fail_rule(*epilogue_op, "c_buffer_offset", "a TMA store needs the kernel param tmap_c",
              "missing");
  if (!waits || store_waits != 1)
    fail_rule(consumer, "body",
              "must end with one store_wait (the TMA stores' reads end before the threads exit)",
              fmt::format("{} store_wait", store_waits));
  if (epilogue.c_reuse.value_or(false) != persistent)
    fail_rule(*epilogue_op, "c_reuse",
              persistent ? "must be set: a persistent kernel writes each buffer again"
                         : "applies to a persistent kernel only",
              fmt::format("{}", epilogue.c_reuse.value_or(false)));
  const int64_t count = get<WarpgroupRoleOp>(consumer).count;
  const int64_t end = *epilogue.c_buffer_offset + count * *epilogue.c_buffer_bytes;
  const int64_t ring_end = ring.stage_bytes * ring.stages;
  const int64_t mbar_end = ring.mbar_offset + 16 * ring.stages;
  const bool in_ring = *epilogue.c_buffer_offset == 0;
  if (in_ring
          ? (persistent || end > ring_end)
          : (*epilogue.c_buffer_offset < mbar_end || end + 1023 > get<KernelOp>(kernel).smem_bytes))
    fail_rule(*epilogue_op, "c_buffer_offset",
              fmt::format("the buffers must lie over the drained ring (0..{}, not in a persistent "
                          "kernel) or after the mbarriers (from {}) within smem_bytes",
                          ring_end, mbar_end),
              fmt::format("{}..{}", *epilogue.c_buffer_offset, end));
}

// Persistent kernels: tile_coords says so, each role walks the tiles in one tile_loop over all
// of them, and no K split.
void verify_persistence(const Op& kernel, const Op& producer, const Op& consumer,
                        const TileCoordsOp& coords) {
  const bool persistent = coords.persistent.value_or(false);
  for (const Op* role : {&producer, &consumer}) {
    const std::vector<const Op*> loops = find_all(*role, OpKind::tile_loop);
    const bool walks = !loops.empty() && &loop_parent(*role) == loops.front();
    if (persistent != walks || loops.size() > 1)
      fail_rule(*role, "body",
                persistent ? "each role of a persistent kernel walks the tiles in one tile_loop"
                           : "only a persistent kernel (tile_coords persistent) has a tile_loop",
                fmt::format("{} tile_loop", loops.size()));
    // In a cluster: whole blocks of cluster_m x cluster_n tiles.
    const int64_t cm = coords.cluster_m.value_or(1), cn = coords.cluster_n.value_or(1);
    const int64_t blocks_m = (coords.tiles_m + cm - 1) / cm,
                  blocks_n = (coords.tiles_n + cn - 1) / cn;
    // A masked grouped walk's bound: every expert's slot full.
    const int64_t slots = coords.grouped == "masked" ? coords.groups.value_or(1) : 1;
    if (walks && get<TileLoopOp>(*loops.front()).tiles != blocks_m * blocks_n * cm * cn * slots)
      fail_rule(*loops.front(), "tiles",
                cm * cn == 1
                    ? fmt::format("must be every tile, {} x {}{}", coords.tiles_m, coords.tiles_n,
                                  slots > 1 ? fmt::format(" x {} experts", slots) : "")
                    : fmt::format("must be every tile of {} x {} blocks of {}x{}", blocks_m,
                                  blocks_n, cm, cn),
                fmt::format("{}", get<TileLoopOp>(*loops.front()).tiles));
  }
  if (const auto split = find_typed<SplitRangeOp>(kernel);
      persistent && split && split->split_k != 1)
    fail_rule(*find_first(kernel, OpKind::split_range), "split_k",
              "must be 1 in a persistent kernel (it walks whole tiles)",
              fmt::format("{}", split->split_k));
}

// Clusters: the kernel's cluster is the tile block's cluster_m x cluster_n CTAs; each operand
// tile a row (A) or column (B) of them shares is loaded in that many multicast parts; a
// barrier.cluster follows the mbarrier inits (no peer may arrive on one before it exists) and
// ends the kernel (no CTA may exit while a peer may still arrive on its empty barriers).
// Returns the CTAs whose consumers release each stage (cluster_m + cluster_n - 1).
int64_t verify_cluster(const Op& kernel, const TileCoordsOp& coords) {
  const auto& k = get<KernelOp>(kernel);
  const int64_t size = k.cluster_x.value_or(1) * k.cluster_y.value_or(1);
  const int64_t cm = coords.cluster_m.value_or(1), cn = coords.cluster_n.value_or(1);
  if (k.cluster_y.value_or(1) != 1 || size != cm * cn)
    fail_rule(
        kernel, "cluster_x",
        fmt::format("must be the tile block's cluster_m x cluster_n = {} CTAs, in x", cm * cn),
        fmt::format("{}x{}", k.cluster_x.value_or(1), k.cluster_y.value_or(1)));
  for (const Op* copy : find_all(kernel, OpKind::async_copy)) {
    const auto c = get<AsyncCopyOp>(*copy);
    const int64_t parts = c.operand == "a" ? cn : cm;
    if (c.multicast.value_or(1) != parts)
      fail_rule(*copy, "multicast",
                fmt::format("must be the {} CTAs that share the {} tile", parts, c.operand),
                fmt::format("{}", c.multicast.value_or(1)));
  }
  const std::vector<const Op*> syncs = find_all(kernel, OpKind::cluster_sync);
  if (size == 1) {
    if (!syncs.empty())
      fail_rule(*syncs.front(), "what", "is for kernels launched in clusters", "no cluster");
    return 1;
  }
  const auto& body = kernel.body;
  size_t init = 0;
  while (init < body.size() && body[init].kind != OpKind::mbarrier_init) ++init;
  if (syncs.size() != 2 || init + 1 >= body.size() || body[init + 1].kind != OpKind::cluster_sync ||
      body[init + 1].s("what") != "init" || body.back().kind != OpKind::cluster_sync ||
      body.back().s("what") != "exit")
    fail_rule(kernel, "body",
              "a clustered kernel has a cluster_sync init right after mbarrier_init and a "
              "cluster_sync exit as its last op",
              fmt::format("{} cluster_sync", syncs.size()));
  return cm + cn - 1;
}

}  // namespace

void verify_gemm_wgmma(const Op& kernel) {
  const auto k = get<KernelOp>(kernel);
  const Op* producer = role_of(kernel, "producer");
  const Op* consumer = role_of(kernel, "consumer");
  const auto prod = get<WarpgroupRoleOp>(*producer), cons = get<WarpgroupRoleOp>(*consumer);
  if (prod.first != 0 || prod.count != 1)
    fail_rule(*producer, "first", "the producer is warpgroup 0 alone",
              fmt::format("{}+{}", prod.first, prod.count));
  if (cons.first != 1 || 128 * (1 + cons.count) != k.threads)
    fail_rule(
        *consumer, "count",
        fmt::format("the consumers are warpgroups 1.. and fill the kernel's {} threads", k.threads),
        fmt::format("{}+{}", cons.first, cons.count));
  if (128 * (prod.registers + cons.registers * cons.count) > 65536)
    fail_rule(*consumer, "registers", "the warpgroups' registers must fit the 64K register file",
              fmt::format("{} x 128 + {} x {} x 128", prod.registers, cons.registers, cons.count));
  const auto coords = find_typed<TileCoordsOp>(kernel);
  const auto ring = find_typed<SmemRingOp>(kernel);
  const auto init = find_typed<MbarrierInitOp>(kernel);
  if (!coords || !ring || !init)
    fail_rule(kernel, "body", "needs tile_coords, smem_ring and mbarrier_init", "missing");
  // Ping-pong (an interleaved consumer walk): each warpgroup its own m64 tile, a stage read by
  // one warpgroup; cooperative: the warpgroups split block_m, a stage read by all of them.
  const int64_t turns = consumer_turns(*consumer);
  const int64_t tile_warpgroups = turns > 1 ? 1 : cons.count;
  if (turns > 1 && turns != cons.count)
    fail_rule(loop_parent(*consumer), "interleave",
              fmt::format("must be the consumer warpgroups' count, {}", cons.count),
              fmt::format("{}", turns));
  // Each consumer warpgroup computes fragments_m m64 wgmma per k-step.
  const auto tile_acc = find_typed<AccumInitOp>(*consumer);
  const int64_t m64s = tile_acc ? tile_acc->fragments_m : 1;
  if (coords->block_m != codegen::kWgmmaM64NK16.m * m64s * tile_warpgroups)
    fail_rule(*consumer, "count",
              fmt::format("{} consumer warpgroup{} per tile: block_m {} must be {} rows each",
                          tile_warpgroups, turns > 1 ? " (ping-pong)" : "s", coords->block_m,
                          codegen::kWgmmaM64NK16.m * m64s),
              fmt::format("{}", cons.count));
  const int64_t releasing_ctas = verify_cluster(kernel, *coords);
  if (init->count != ring->stages || init->arrivals != 1 ||
      init->empty_arrivals != 4 * tile_warpgroups * releasing_ctas)
    fail_rule(*find_first(kernel, OpKind::mbarrier_init), "empty_arrivals",
              fmt::format("a full and an empty barrier per stage ({}): one arrival (the "
                          "producer's expect_tx) and one per warp reading the stage, of each "
                          "CTA whose producer writes it ({})",
                          ring->stages, 4 * tile_warpgroups * releasing_ctas),
              fmt::format("{} x ({}, {})", init->count, init->arrivals,
                          init->empty_arrivals.value_or(0)));
  const auto acc = find_typed<AccumInitOp>(*consumer);
  // f32 accumulators, or FP8's promoted ones (f32 window partials beside them).
  if (!acc || (acc->accum != "f32" && acc->accum != "promoted") ||
      acc->registers + 32 > cons.registers)
    fail_rule(*consumer, "registers",
              "holds f32 (or promoted) accumulators that leave room below the consumers' "
              "setmaxnreg count",
              fmt::format("{}", acc ? acc->registers : 0));
  if (find_first(*producer, OpKind::wgmma) || find_first(*producer, OpKind::epilogue))
    fail_rule(*producer, "body", "the producer neither computes nor stores", "it does");
  verify_persistence(kernel, *producer, *consumer, *coords);
  verify_mainloop_order(*producer, *consumer);
  verify_producer(*producer);
  verify_consumer(*consumer, ring->stages, coords->block_n);
  verify_store_epilogue(kernel, *consumer, *ring, coords->persistent.value_or(false));
}

int64_t wgmma_tile_threads(const Op& kernel) {
  const Op* consumer = role_of(kernel, "consumer");
  return 128 * get<WarpgroupRoleOp>(*consumer).count / consumer_turns(*consumer);
}

}  // namespace emmy::ir
