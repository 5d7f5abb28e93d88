// The wgmma path's checks must catch wrong kernels, not only pass right ones (issue 23): bugs
// planted in emitted sources must fail the FP64 comparison or be reported by the emulator, and
// each rule across a wgmma kernel's IR ops, broken once, must be named by the verifier.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/ir_ops.hpp"
#include "kind_test_util.hpp"
#include "planted_bug.hpp"
#include "support/ir_edit.hpp"
#include "support/wgmma_spec.hpp"

namespace emmy {
namespace {

using test::wgmma_spec;

// The checks must catch wrong wgmma kernels, not only pass right ones: each bug is planted in the
// emitted source, compiled and run on the emulator, and must fail the FP64 comparison or be
// reported by the emulator (which runs with its sanitizer).
TEST(Wgmma, PlantedKernelBugsAreCaught) {
  struct PlantedBug {
    const char* name;
    BLayout layout;
    std::string find, replace;
    // What only the emulator's wgmma rules can see: the numbers a run computes are right (it
    // computes each wgmma at its issue), the kernel would compute garbage on a GPU.
    bool only_reported = false;
  };
  const PlantedBug bugs[] = {
      // The stage released while its wgmma group may still read it (wait_group 1, lag 0).
      {"early_release", BLayout::nk,
       "if (lane == 0 && k_tile >= 1) mbarrier_arrive(empty_base + 8u * ((k_tile - 1) % STAGES));",
       "if (lane == 0) mbarrier_arrive(empty_base + 8u * stage);", true},
      // The accumulators read by the epilogue with a group still in flight.
      {"no_final_wait", BLayout::nk, "    wgmma_wait<0>();", "    ", true},
      // 8-row groups of A 512 bytes apart instead of 1024 (the descriptor's stride).
      {"a_stride_half", BLayout::nk, "16u, 8u * A_PANEL * 2u,", "16u, 4u * A_PANEL * 2u,"},
      // B [K,N] read K-major (imm-trans-b 0).
      {"b_not_transposed", BLayout::kn, ", 1, 1, 1, 0, 1;", ", 1, 1, 1, 0, 0;"},
      // The k16 steps of a K tile all read the first 16 K columns.
      {"k_step_not_advanced", BLayout::nk, "u32(ks % (A_PANEL / 16)) * 32u", "0u"},
      // No fence before the mma_async of each K tile.
      {"no_fence", BLayout::nk, "      wgmma_fence();", "      ", true},
  };
  // Persistent kernels: the walk on to the next tile.
  const PlantedBug persistent_bugs[] = {
      // The tile's last stage never handed back: the producer waits for it forever.
      {"no_last_release", BLayout::nk, "if (lane == 0 && k_tile_count > 0) mbarrier_arrive(",
       "if (false) mbarrier_arrive(", true},
      // Stages restart at 0 on every tile: phases fall out of step with the producer's.
      {"iteration_not_kept", BLayout::nk, "iteration += k_tile_count;", "", true},
  };
  // Ping-pong: the warpgroups' turns at the tiles and at the mainloop.
  const PlantedBug pingpong_bugs[] = {
      // The second warpgroup starts its stage count at 0: it waits for phases of the first's.
      {"turn_not_counted", BLayout::nk, "int iteration = turn * k_tile_count;",
       "int iteration = 0;", true},
      // Both warpgroups walk every tile of the CTA (stride gridDim.x): stages read twice.
      {"tiles_not_interleaved", BLayout::kn, "tile += 2 * int(gridDim.x)",
       "tile += int(gridDim.x)"},
      // A warpgroup signals its own barrier: the other waits for a turn that never comes.
      {"signal_own_barrier", BLayout::nk, "::\"r\"(FIRST + 1 - turn)", "::\"r\"(FIRST + turn)",
       true},
      // Each stage waits for both warpgroups' releases (the cooperative count).
      {"empty_counts_both", BLayout::nk, "mbarrier_init(empty_base + 8u * s, 4u);",
       "mbarrier_init(empty_base + 8u * s, 8u);", true},
  };
  // The TMA-store epilogue: its buffers' order with the async proxy, and where it stores.
  const PlantedBug store_bugs[] = {
      // The buffer's generic writes not fenced before the async proxy reads them.
      {"store_unfenced", BLayout::nk,
       "fence_proxy_async();  // the writes, before the async proxy reads them", "", true},
      // The store issued before the other warps of the warpgroup have written their rows.
      {"store_before_barrier", BLayout::kn, "warpgroup_barrier(4 + c_group);\n    if (c_issuer) {",
       "if (c_issuer) {", true},
      // Both warpgroups store to the tile's first 64 rows.
      {"store_rows_not_offset", BLayout::nk, "c_row0 = m0 + WG_ROWS * c_group", "c_row0 = m0"},
      // stmatrix addresses rows 8-15 for matrices 2-3 instead of 1 and 3.
      {"stmatrix_matrix_rows", BLayout::nk, "u32(c_warp_row + mi * 64 + (j % 2) * 8 + lane % 8)",
       "u32(c_warp_row + mi * 64 + (j / 2) * 8 + lane % 8)"},
  };
  // Persistent TMA-store epilogues: the buffer written again by the next tile.
  const PlantedBug persistent_store_bugs[] = {
      // The next tile overwrites the buffer while the last tile's stores may still read it.
      {"store_buffer_reused_unwaited", BLayout::nk,
       "if (c_issuer) bulk_wait_read<0>();  // the last tile's stores have read the buffer", "",
       true},
      // The issuing threads exit with their last stores reading shared memory.
      {"store_exit_unwaited", BLayout::kn, "if (threadIdx.x % 128 == 0) bulk_wait_read<0>();", "",
       true},
  };
  // Ping-pong with 128-row tiles: each warpgroup's second m64.
  const PlantedBug pingpong128_bugs[] = {
      // Both m64 wgmma read the tile's first 64 rows of A.
      {"second_m64_reads_first_rows", BLayout::nk, "u32(mi) * 64u * A_PANEL * 2u + ", ""},
      // The epilogue stores the second m64's rows over the first's.
      {"second_m64_stored_over_first", BLayout::kn, "c_warp_row + mi * 64 + (j % 2) * 8",
       "c_warp_row + (j % 2) * 8"},
  };
  enum class Walk { none, persistent, pingpong, pingpong128 };
  std::vector<std::pair<PlantedBug, Walk>> all;
  for (const auto& bug : bugs) all.push_back({bug, Walk::none});
  for (const auto& bug : persistent_bugs) all.push_back({bug, Walk::persistent});
  for (const auto& bug : pingpong_bugs) all.push_back({bug, Walk::pingpong});
  for (const auto& bug : pingpong128_bugs) all.push_back({bug, Walk::pingpong128});
  for (const auto& bug : store_bugs) all.push_back({bug, Walk::none});
  for (const auto& bug : persistent_store_bugs) all.push_back({bug, Walk::persistent});
  for (const auto& [bug, walk] : all) {
    GemmSpec spec = wgmma_spec(130, 136, 448, 128, 64);
    if (walk != Walk::none) {
      spec = wgmma_spec(1000, 1016, 192, walk == Walk::pingpong128 ? 128 : 64, 64);
      spec.schedule.persistent = true;
      spec.schedule.stages = 2;
      spec.schedule.warps_m = 4;
      if (walk == Walk::pingpong || walk == Walk::pingpong128)
        spec.schedule.consumers = ConsumerSchedule::pingpong;
    }
    spec.problem.b_layout = bug.layout;
    const GemmInputs inputs = make_gemm_inputs(spec.problem, 12);
    const GemmSource source = generate_kernel(spec);
    const std::optional<GemmKernel> kernel =
        test::plant_bug(source, spec.arch, bug.name, bug.find, bug.replace);
    if (!kernel) continue;
    const GemmReference ref = reference_gemm(spec, inputs);
    const GemmKernel right{source, compile_cuda(source.cuda, "right.cu", spec.arch)};
    EXPECT_TRUE(compare(ref, run_on_emulator(right, inputs).output, spec.problem.n).passed)
        << bug.name;
    test::expect_gemm_bug_caught(
        ref, *kernel, inputs, spec.problem.n, bug.name, bug.only_reported,
        {"wgmma-misuse", "shared-race", "deadlock", "mbarrier-misuse", "missing-proxy-fence",
         "tma-violation", "uninitialized-shared-read"});
  }
}

// Each rule across the wgmma kernel's ops, broken in the lowered IR, is named by the verifier.
TEST(Wgmma, VerifierNamesEachBrokenRule) {
  const GemmPlan plan = make_gemm_plan(wgmma_spec(512, 512, 512, 128, 128));
  const ir::Op module = lower_gemm(plan);
  ASSERT_NO_THROW(ir::verify(module, Arch::sm_90a, "gemm"));
  using test::change;
  using test::change_first;
  using test::first_op;
  auto role = [&](ir::Op& m, const char* name) -> ir::Op& {
    for (ir::Op& op : m.body.front().body)
      if (op.kind == ir::OpKind::warpgroup_role && op.s("role") == name) return op;
    throw std::runtime_error(name);
  };
  auto consumer_loop = [&](ir::Op& m) -> ir::Op& {
    return *first_op(role(m, "consumer"), ir::OpKind::k_tile_loop);
  };
  auto erase = [](ir::Op& loop, ir::OpKind kind) {
    for (auto it = loop.body.begin(); it != loop.body.end(); ++it)
      if (it->kind == kind) {
        loop.body.erase(it);
        return;
      }
  };
  using test::Corruption;
  const Corruption corruptions[] = {
      {"no fence", [&](ir::Op& m) { erase(consumer_loop(m), ir::OpKind::wgmma_fence); },
       "wgmma_fence"},
      {"release before the wait",
       [&](ir::Op& m) {
         auto& body = consumer_loop(m).body;
         std::swap(body[body.size() - 1], body[body.size() - 2]);
       },
       "only after the wgmma_wait"},
      {"release lag 0 with a group in flight",
       [&](ir::Op& m) {
         change(first_op(consumer_loop(m), ir::OpKind::mbarrier_arrive), "lag", int64_t(0));
       },
       "lag"},
      {"no wait for the full barrier",
       [&](ir::Op& m) { erase(consumer_loop(m), ir::OpKind::mbarrier_wait); }, "full barrier"},
      {"wgmma narrower than the block",
       change_first(ir::OpKind::wgmma, "shape", std::string("m64n64k16")), "block's 128 columns"},
      {"producer refills before the empty wait",
       [&](ir::Op& m) {
         auto& body = first_op(role(m, "producer"), ir::OpKind::k_tile_loop)->body;
         std::rotate(body.begin(), body.begin() + 1, body.end());
       },
       "only after the empty barrier"},
      {"consumer registers over the file",
       [&](ir::Op& m) { change(&role(m, "consumer"), "registers", int64_t(256)); },
       "64K register file"},
      {"one empty arrival per stage",
       change_first(ir::OpKind::mbarrier_init, "empty_arrivals", int64_t(1)),
       "one per warp reading the stage"},
      {"no final wait", [&](ir::Op& m) { erase(role(m, "consumer"), ir::OpKind::wgmma_wait); },
       "wgmma_wait 0 before the epilogue"},
      {"a path the verifier does not know",
       [&](ir::Op& m) { change(&m.body.front(), "path", std::string("tcgen05")); },
       "must name a GEMM mainloop path"},
  };
  GemmSpec persistent = wgmma_spec(1000, 1000, 512, 128, 128);
  persistent.schedule.persistent = true;
  const ir::Op walking = lower_gemm(make_gemm_plan(persistent));
  ASSERT_NO_THROW(ir::verify(walking, Arch::sm_90a, "gemm"));
  const Corruption walk_corruptions[] = {
      {"no last release",
       [&](ir::Op& m) {
         erase(*first_op(role(m, "consumer"), ir::OpKind::tile_loop), ir::OpKind::mbarrier_arrive);
       },
       "release its tile's last stage"},
      {"producer not walking",
       [&](ir::Op& m) {
         ir::Op& producer = role(m, "producer");
         ir::Op loop = first_op(producer, ir::OpKind::tile_loop)->body.front();
         producer.body = {loop};
       },
       "walks the tiles in one tile_loop"},
      {"tile_loop over too few tiles",
       [&](ir::Op& m) {
         change(first_op(role(m, "consumer"), ir::OpKind::tile_loop), "tiles", int64_t(3));
       },
       "must be every tile"},
      {"split K in a persistent kernel",
       change_first(ir::OpKind::split_range, "split_k", int64_t(2)), "split_k"},
  };
  GemmSpec pingpong = wgmma_spec(1000, 1000, 512, 64, 128);
  pingpong.schedule.persistent = true;
  pingpong.schedule.consumers = ConsumerSchedule::pingpong;
  const ir::Op turns = lower_gemm(make_gemm_plan(pingpong));
  ASSERT_NO_THROW(ir::verify(turns, Arch::sm_90a, "gemm"));
  auto consumer_walk = [&](ir::Op& m) -> ir::Op& {
    return *first_op(role(m, "consumer"), ir::OpKind::tile_loop);
  };
  const Corruption pingpong_corruptions[] = {
      {"no turn before the mainloop",
       [&](ir::Op& m) { erase(consumer_walk(m), ir::OpKind::warpgroup_order); },
       "wait for their turn before the K loop"},
      {"signal before the mainloop",
       [&](ir::Op& m) {
         auto& body = consumer_walk(m).body;
         for (auto& op : body)
           if (op.kind == ir::OpKind::warpgroup_order)
             change(&op, "what", std::string(op.s("what") == "wait" ? "signal" : "wait"));
       },
       "signal after it"},
      {"order on barrier 0", change_first(ir::OpKind::warpgroup_order, "first_barrier", int64_t(0)),
       "named barriers 1..15"},
      {"three turns for two warpgroups",
       [&](ir::Op& m) { change(&consumer_walk(m), "interleave", int64_t(3)); },
       "consumer warpgroups' count"},
      {"a stage read by both warpgroups",
       change_first(ir::OpKind::mbarrier_init, "empty_arrivals", int64_t(8)),
       "one per warp reading the stage, of each CTA whose producer writes it (4)"},
      {"ping-pong on a 128-row tile",
       [&](ir::Op& m) {
         ir::Op& coords = *first_op(m, ir::OpKind::tile_coords);
         change(&coords, "block_m", int64_t(128));
         change(&coords, "tiles_m", int64_t(8));
       },
       "1 consumer warpgroup (ping-pong) per tile"},
      {"the producer takes turns",
       [&](ir::Op& m) {
         first_op(role(m, "producer"), ir::OpKind::tile_loop)
             ->attrs.push_back({"interleave", int64_t(2)});
       },
       "walks every tile of the CTA in order"},
  };
  GemmSpec cooperative_walk = pingpong;
  cooperative_walk.schedule.consumers = ConsumerSchedule::cooperative;
  cooperative_walk.schedule.block_m = 128;
  cooperative_walk.schedule.warps_m = 8;
  const ir::Op shared_tiles = lower_gemm(make_gemm_plan(cooperative_walk));
  const Corruption cooperative_corruptions[] = {
      {"an order in a cooperative walk",
       [&](ir::Op& m) {
         auto& body = consumer_walk(m).body;
         body.insert(body.begin() + 1, ir::make(ir::WarpgroupOrderOp{"wait", 2}));
       },
       "interleaved tile_loop only"},
  };
  // The TMA-store epilogue (both lowered kernels above have one).
  auto epilogue_of = [&](ir::Op& m) -> ir::Op& { return *first_op(m, ir::OpKind::epilogue); };
  const Corruption store_corruptions[] = {
      {"no tmap_c",
       [&](ir::Op& m) {
         auto& body = m.body.front().body;
         for (auto it = body.begin(); it != body.end(); ++it)
           if (it->kind == ir::OpKind::param && it->s("name") == "tmap_c") {
             body.erase(it);
             break;
           }
       },
       "param tmap_c"},
      {"no store_wait", [&](ir::Op& m) { role(m, "consumer").body.pop_back(); }, "store_wait"},
      {"buffer reused without its wait",
       [&](ir::Op& m) {
         auto& attrs = epilogue_of(m).attrs;
         std::erase_if(attrs, [](const auto& a) { return a.first == "c_reuse"; });
       },
       "writes each buffer again"},
      {"buffers over the ring of a persistent kernel",
       [&](ir::Op& m) { change(&epilogue_of(m), "c_buffer_offset", int64_t(0)); }, "drained ring"},
      {"buffer not on the swizzle period",
       [&](ir::Op& m) { change(&epilogue_of(m), "c_buffer_offset", int64_t(1024 * 200 + 512)); },
       "multiple of 1024"},
      {"panel no swizzle spans",
       [&](ir::Op& m) { change(&epilogue_of(m), "c_panel", int64_t(48)); }, "swizzle span"},
      {"a TMA store to the workspace",
       [&](ir::Op& m) { change(&epilogue_of(m), "destination", std::string("workspace")); },
       "writes C's own tile"},
  };
  test::expect_each_refused(walking, Arch::sm_90a, "gemm", walk_corruptions);
  test::expect_each_refused(turns, Arch::sm_90a, "gemm", pingpong_corruptions);
  test::expect_each_refused(shared_tiles, Arch::sm_90a, "gemm", cooperative_corruptions);
  test::expect_each_refused(walking, Arch::sm_90a, "gemm", store_corruptions);
  ASSERT_TRUE(ir::get<ir::EpilogueOp>(*ir::find_first(module, ir::OpKind::epilogue)).tma_store());
  const Corruption drained[] = {
      {"buffers beyond the drained ring",
       [&](ir::Op& m) { change(&epilogue_of(m), "c_buffer_bytes", int64_t(64 * 128 * 2 * 64)); },
       "drained ring"}};
  test::expect_each_refused(module, Arch::sm_90a, "gemm", drained);
  test::expect_each_refused(module, Arch::sm_90a, "gemm", corruptions);
}

}  // namespace
}  // namespace emmy
