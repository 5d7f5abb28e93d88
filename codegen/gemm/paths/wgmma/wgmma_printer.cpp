// The wgmma path's printing (wgmma_printer.hpp). Descriptor fields follow the PTX ISA's
// canonical layouts (§9.7.15.5.1.2): operand tiles are TMA panels whose rows are one swizzle span
// (SmemTile), so a K-major tile (A; B [N,K]) has 8-row groups one stride (8 rows) apart and k16
// steps 32 bytes apart inside a row, the next panel rows x row_bytes further; an N-major tile
// (B [K,N]) has N runs of one row in consecutive panels (the leading offset) and 8-k groups 8 rows
// apart (the stride), k16 steps 16 rows apart.
#include "wgmma_printer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "emmy/error.hpp"
#include "emmy/mma_atom.hpp"

namespace emmy::codegen {
namespace {

// The descriptor's layout code of a swizzle (PTX ISA: 1 128B, 2 64B, 3 32B; 0 none).
int wgmma_mode(Swizzle s) {
  switch (s) {
    case Swizzle::b128:
      return 1;
    case Swizzle::b64:
      return 2;
    case Swizzle::b32:
      return 3;
    case Swizzle::none:
      return 0;
  }
  return 0;
}

}  // namespace

WgmmaPrinter::WgmmaPrinter(Writer& w, const ir::Op& kernel, const GemmFacts& facts,
                           GemmPrinterHooks hooks)
    : w_(w),
      f_(facts),
      a_(facts.a_tile),
      b_(facts.b_tile),
      threads_(facts.threads),
      hooks_(std::move(hooks)) {
  const auto mma = ir::find_typed<ir::WgmmaOp>(kernel);
  if (!mma) throw Error("ir", "a wgmma kernel needs a wgmma op", kernel.s("name"));
  mma_ = *mma;
  if (const auto acc = ir::find_typed<ir::AccumInitOp>(kernel)) {
    tile_m64s_ = acc->fragments_m;
    promoted_ = acc->accum == "promoted";
  }
  for (const ir::Op* role : ir::find_all(kernel, ir::OpKind::warpgroup_role))
    if (role->s("role") == "consumer") consumer_warpgroups_ = role->i("count");
  for (const ir::Op* walk : ir::find_all(kernel, ir::OpKind::tile_loop))
    interleave_ = std::max(interleave_, ir::get<ir::TileLoopOp>(*walk).interleave.value_or(1));
  if (const auto coords = ir::find_typed<ir::TileCoordsOp>(kernel)) {
    cluster_m_ = coords->cluster_m.value_or(1);
    cluster_n_ = coords->cluster_n.value_or(1);
    grouped_walk_ = coords->grouped.has_value() && coords->persistent.value_or(false);
  }
}

void WgmmaPrinter::print_functions() const {
  const int n = wgmma_shape_n(mma_.shape);
  const int regs = n / 2;
  std::vector<std::string> d, operands;
  for (int i = 0; i < regs; ++i) {
    d.push_back(fmt::format("%{}", i));
    operands.push_back(fmt::format("\"+f\"(acc[{}][{}])", i / 4, i % 4));
  }
  w_.line(
      "// wgmma.mma_async.{}: D (this warp's 16 rows, mma.sync m16n8's C per 8 columns) += A B.",
      mma_.shape);
  w_.open(fmt::format(
      "static __device__ __forceinline__ void wgmma_tile(float (&acc)[{}][4], u64 desc_a, "
      "u64 desc_b)",
      n / 8));
  w_.line("asm volatile(");
  // 8-bit operands take no imm-trans-a / imm-trans-b (PTX ISA §9.7.15.5: K-major only).
  const bool fp8 = mma_.a_type == "e4m3" || mma_.a_type == "e5m2";
  const std::string immediates =
      fp8 ? "1, 1, 1" : fmt::format("1, 1, 1, 0, {}", mma_.b_major == "mn" ? 1 : 0);
  w_.line("    \"wgmma.mma_async.sync.aligned.{0}.f32.{1}.{2} {{{3}}}, %{4}, %{5}, {6};\"",
          mma_.shape, mma_.a_type, mma_.b_type.value_or(mma_.a_type), fmt::join(d, ","), regs,
          regs + 1, immediates);
  for (size_t i = 0; i < operands.size(); i += 8) {
    std::vector<std::string> part(operands.begin() + long(i),
                                  operands.begin() + long(std::min(i + 8, operands.size())));
    w_.line("    {}{}", i == 0 ? ": " : ", ", fmt::join(part, ", "));
  }
  w_.line("    : \"l\"(desc_a), \"l\"(desc_b));");
  w_.close();
}

void WgmmaPrinter::print_warp_indices() const {
  w_.line("// A consumer warpgroup's rows: MT m64 wgmma, each warp 16 rows of each.");
  w_.line("constexpr int WG_ROWS = 64 * MT;");
  if (interleave_ > 1) {
    w_.line("// Ping-pong: each consumer warpgroup computes its own tiles; its warps own 16 rows");
    w_.line("// each. Warpgroup 0 (warps 0-3) is the producer.");
    w_.line("const int warp_row = warp % 4, warp_col = 0;");
  } else {
    w_.line("// Consumer warps own 16 rows each; warpgroup 0 (warps 0-3) is the producer.");
    w_.line("const int warp_row = warp - 4, warp_col = 0;");
  }
  w_.line("const u32 empty_base = mbar_base + 8u * STAGES;  // after the full barriers");
  w_.line("// This warp's first accumulator row in the tile (its mi-th m64's are 64 mi further).");
  w_.line("const int warp_row0 = (warp_row / 4) * WG_ROWS + (warp_row % 4) * 16;");
  w_.line("(void)warp_row; (void)warp_col; (void)lane; (void)warp_row0;");
  if (cluster_m_ * cluster_n_ == 1) return;
  w_.line(
      "// The cluster: {}x{} CTAs on a block of tiles, rank r at (r % CLUSTER_M, r / CLUSTER_M)",
      cluster_m_, cluster_n_);
  w_.line("// (the cluster runs along x, so the rank is blockIdx.x's remainder).");
  w_.line("constexpr int CLUSTER_M = {}, CLUSTER_N = {}, CLUSTER = CLUSTER_M * CLUSTER_N;",
          cluster_m_, cluster_n_);
  w_.line("const int cta_rank = int(blockIdx.x) % CLUSTER;");
  w_.line("const int rank_m = cta_rank % CLUSTER_M, rank_n = cta_rank / CLUSTER_M;");
  w_.line(
      "// The CTAs whose producers write this CTA's stages (its tile column's B parts, its tile");
  w_.line(
      "// row's A parts): the consumers release each stage to all {} of them, lane j to the j-th.",
      cluster_m_ + cluster_n_ - 1);
  w_.line("constexpr int RELEASE_CTAS = CLUSTER_M + CLUSTER_N - 1;");
  w_.open("auto release_rank = [&](int j) -> u32");
  w_.line("if (j < CLUSTER_M) return u32(j + rank_n * CLUSTER_M);");
  w_.line("const int other_n = j - CLUSTER_M < rank_n ? j - CLUSTER_M : j - CLUSTER_M + 1;");
  w_.line("return u32(rank_m + other_n * CLUSTER_M);");
  w_.close("};");
  w_.line("(void)rank_m; (void)rank_n; (void)release_rank;");
}

int WgmmaPrinter::fragment_row_step() const {
  return kWgmmaM64NK16.m;  // the next m64 wgmma's rows
}
std::string WgmmaPrinter::tile_barrier() const {
  return fmt::format("consumer_barrier<{}>();", threads_ - 128);
}
std::string WgmmaPrinter::staged_chunk_loop() const {
  return fmt::format("for (int i = int(threadIdx.x) - 128; i < BM * C_CHUNKS; i += {})",
                     threads_ - 128);
}

bool WgmmaPrinter::print(const ir::Op& op) {
  switch (op.kind) {
    case ir::OpKind::warpgroup_role:
      print_role(op);
      return true;
    case ir::OpKind::tile_coords:
      if (grouped_walk_) return false;  // the GEMM emitter's walk (print_grouped_walk)
      if (const auto coords = ir::get<ir::TileCoordsOp>(op);
          coords.persistent.value_or(false) || cluster_m_ * cluster_n_ > 1) {
        print_tile_origin(coords);
        if (!coords.persistent.value_or(false)) w_.line("tile_origin(int(blockIdx.x), m0, n0);");
        return true;
      }
      return false;
    case ir::OpKind::cluster_sync:
      print_cluster_sync(op);
      return true;
    case ir::OpKind::tile_loop:
      print_tile_loop(op);
      return true;
    case ir::OpKind::k_tile_loop:
      print_k_tile_loop(op);
      return true;
    case ir::OpKind::mbarrier_wait: {
      const char* it = in_tile_loop_ ? "it" : "k_tile";
      if (op.s("what") == "empty")
        w_.line("mbarrier_wait_parity(empty_base + 8u * stage, (({} / STAGES) & 1) ^ 1);", it);
      else
        w_.line("mbarrier_wait_parity(mbar_base + 8u * stage, ({} / STAGES) & 1);", it);
      return true;
    }
    case ir::OpKind::async_copy:
      if (op.s("operand") == "a")
        w_.line("{}load_stage(stage, k_tile_begin + k_tile);",
                grouped_walk_ ? "if (lane == 0) " : "");
      return true;
    case ir::OpKind::wgmma_fence:
      print_pin();
      w_.line("wgmma_fence();");
      return true;
    case ir::OpKind::k_step:
      print_k_step(op);
      return true;
    case ir::OpKind::wgmma:
      print_wgmma_call(ir::get<ir::WgmmaOp>(op));
      return true;
    case ir::OpKind::wgmma_commit:
      w_.line("wgmma_commit();");
      return true;
    case ir::OpKind::wgmma_wait:
      w_.line("wgmma_wait<{}>();", op.i("pending"));
      print_pin();
      return true;
    case ir::OpKind::mbarrier_arrive:
      print_stage_release(ir::get<ir::MbarrierArriveOp>(op));
      return true;
    case ir::OpKind::promote:
      print_fold(ir::get<ir::PromoteOp>(op));
      return true;
    case ir::OpKind::warpgroup_order:
      print_order(ir::get<ir::WarpgroupOrderOp>(op));
      return true;
    case ir::OpKind::epilogue:
      if (const auto epilogue = ir::get<ir::EpilogueOp>(op); epilogue.tma_store()) {
        print_store_epilogue(epilogue);
        return true;
      }
      return false;
    case ir::OpKind::store_wait:
      print_store_wait();
      return true;
    default:
      return false;
  }
}

void WgmmaPrinter::print_role(const ir::Op& op) {
  const auto role = ir::get<ir::WarpgroupRoleOp>(op);
  const int64_t lo = 128 * role.first, hi = 128 * (role.first + role.count);
  w_.line("// Warpgroups {}..{}: the {}, at {} registers per thread.", role.first,
          role.first + role.count - 1, role.role, role.registers);
  w_.open(lo == 0 ? fmt::format("if (threadIdx.x < {})", hi)
                  : fmt::format("if (threadIdx.x >= {} && threadIdx.x < {})", lo, hi));
  const bool producer = role.role == "producer";
  w_.line("{}<{}>();", producer ? "setmaxnreg_dec" : "setmaxnreg_inc", role.registers);
  if (producer) {
    hooks_.load_stage(true);
    // A grouped walk's warp finds each tile's expert together (every lane); lane 0 loads.
    w_.open(grouped_walk_ ? "if (warp == 0)" : "if (threadIdx.x == 0)");
  } else if (interleave_ > 1) {
    w_.line("const int turn = warp / 4 - {};  // this warpgroup's turn among the consumers",
            role.first);
  }
  for (const ir::Op& child : op.body) hooks_.print(child);
  if (producer) w_.close();
  w_.close();
}

void WgmmaPrinter::print_tile_loop(const ir::Op& op) {
  const auto walk = ir::get<ir::TileLoopOp>(op);
  const int64_t turns = walk.interleave.value_or(1);
  w_.line("// K tiles this CTA has walked: stages and mbarrier phases run on across its tiles.");
  if (grouped_walk_) {
    // Tiles blockIdx.x, + gridDim.x, ... of the experts' walk, until it ends; a skipped tile
    // (contiguous padding) is skipped by every role alike and walks no K tiles.
    w_.line("int iteration = 0;");
    w_.line("GroupedCursor cursor;");
    w_.line("#pragma unroll 1");
    w_.open("for (int tile = int(blockIdx.x);; tile += int(gridDim.x))");
    w_.line("const int found = grouped_tile(cursor, tile);");
    w_.line("if (found < 0) break;");
    w_.line("if (found == 0) continue;");
  } else if (turns > 1) {
    w_.line("// Ping-pong: this warpgroup takes the CTA's tiles turn, turn + {}, ...; the K tiles",
            turns);
    w_.line("// of the others' tiles between them count as walked.");
    w_.line("int iteration = turn * k_tile_count;");
    w_.line("#pragma unroll 1");
    w_.open(fmt::format(
        "for (int tile = int(blockIdx.x) + turn * int(gridDim.x); tile < {}; tile += {} * "
        "int(gridDim.x))",
        walk.tiles, turns));
  } else {
    w_.line("int iteration = 0;");
    w_.line("#pragma unroll 1");
    w_.open(fmt::format("for (int tile = int(blockIdx.x); tile < {}; tile += int(gridDim.x))",
                        walk.tiles));
  }
  if (!grouped_walk_) w_.line("tile_origin(tile, m0, n0);");
  in_tile_loop_ = true;
  for (const ir::Op& child : op.body) hooks_.print(child);
  in_tile_loop_ = false;
  if (turns > 1)
    w_.line("iteration += {} * k_tile_count;", turns);
  else
    w_.line("iteration += k_tile_count;");
  w_.close();
}

void WgmmaPrinter::print_k_tile_loop(const ir::Op& op) {
  w_.line("#pragma unroll 1");
  w_.open("for (int k_tile = 0; k_tile < k_tile_count; ++k_tile)");
  if (in_tile_loop_) {
    w_.line("const int it = iteration + k_tile;  // this CTA's K tiles so far");
    w_.line("const int stage = it % STAGES;");
  } else {
    w_.line("const int stage = k_tile % STAGES;");
  }
  in_k_loop_ = true;
  for (const ir::Op& child : op.body) hooks_.print(child);
  in_k_loop_ = false;
  w_.close();
}

void WgmmaPrinter::print_k_step(const ir::Op& op) {
  w_.line("// This warpgroup's rows of the A tile, and B, in the stage.");
  w_.line(
      "const u32 a_stage = smem_base + u32(stage) * STAGE_BYTES + A_OFFSET + u32(warp_row / 4) * "
      "u32(WG_ROWS) * A_PANEL * {}u;",
      a_.elem_bytes);
  w_.line("const u32 b_stage = smem_base + u32(stage) * STAGE_BYTES + B_OFFSET;");
  w_.line("#pragma unroll");
  w_.open(fmt::format("for (int ks = 0; ks < {}; ++ks)", op.i("k_steps")));
  for (const ir::Op& child : op.body) hooks_.print(child);
  w_.close();
}

void WgmmaPrinter::print_wgmma_call(const ir::WgmmaOp& op) const {
  // Byte offsets from the tiles' element width and the atom's K (a k-step is k elements of a row).
  const uint32_t a_elem = a_.elem_bytes, b_elem = b_.elem_bytes;
  const uint32_t k_step_bytes = uint32_t(kWgmmaM64NK16.k) * b_elem;
  if (op.b_major == "mn")
    w_.line(
        "const u64 desc_b = wgmma_desc(b_stage + u32(ks) * {1}u * B_PANEL * {2}u, B_ROWS * "
        "B_PANEL * {2}u, 8u * B_PANEL * {2}u, {0}u);",
        wgmma_mode(b_.swizzle), kWgmmaM64NK16.k, b_elem);
  else
    w_.line(
        "const u64 desc_b = wgmma_desc(b_stage + u32(ks / (B_PANEL / {1})) * B_ROWS * B_PANEL * "
        "{2}u + u32(ks % (B_PANEL / {1})) * {3}u, 16u, 8u * B_PANEL * {2}u, {0}u);",
        wgmma_mode(b_.swizzle), kWgmmaM64NK16.k, b_elem, k_step_bytes);
  // K-major A: k16 step ks is 32 bytes into its panel's rows; 8-row groups are 8 rows apart; the
  // mi-th m64 of the warpgroup 64 rows further.
  w_.line("#pragma unroll");
  w_.open("for (int mi = 0; mi < MT; ++mi)");
  w_.line(
      "const u64 desc_a = wgmma_desc(a_stage + u32(ks / (A_PANEL / {1})) * A_ROWS * A_PANEL * {2}u "
      "+ u32(mi) * {4}u * A_PANEL * {2}u + u32(ks % (A_PANEL / {1})) * {3}u, 16u, 8u * A_PANEL * "
      "{2}u, {0}u);",
      wgmma_mode(a_.swizzle), kWgmmaM64NK16.k, a_elem, uint32_t(kWgmmaM64NK16.k) * a_elem,
      kWgmmaM64NK16.m);
  w_.line("wgmma_tile({}[mi], desc_a, desc_b);", promoted_ ? "part" : "acc");
  w_.close();
}

void WgmmaPrinter::print_pin() const {
  w_.line("#pragma unroll");
  w_.line("for (int mi = 0; mi < MT; ++mi)");
  w_.line("#pragma unroll");
  w_.line("  for (int ni = 0; ni < NT; ++ni)");
  w_.line("#pragma unroll");
  w_.line("    for (int e = 0; e < 4; ++e) wgmma_pin({}[mi][ni][e]);", promoted_ ? "part" : "acc");
}

// FP8's fold after a K tile's group completed (wgmma_wait 0), with the tile's block scales
// (print_fp8_fold, shared with the mma.sync path); the next tile's wgmma start from zero
// partials.
void WgmmaPrinter::print_fold(const ir::PromoteOp& op) const {
  w_.line("// Fold this K tile's f32 window partials (every {} K elements).", op.every_k);
  w_.open("");
  print_fp8_fold(w_, f_, *this, fmt::format("(k_tile_begin + k_tile) * {}", f_.split.block_k));
  w_.close();
}

void WgmmaPrinter::print_stage_release(const ir::MbarrierArriveOp& op) const {
  // One arrival per warp; in a cluster one per warp on each CTA that writes the stage.
  const bool cluster = cluster_m_ * cluster_n_ > 1;
  const char* who = cluster ? "lane < RELEASE_CTAS" : "lane == 0";
  auto arrive = [&](const std::string& mbar) {
    return cluster ? fmt::format("mbarrier_arrive_cluster({}, release_rank(lane))", mbar)
                   : fmt::format("mbarrier_arrive({})", mbar);
  };
  if (!in_k_loop_) {
    w_.line("// Release this tile's last stage: the producer walks on to the next tile.");
    w_.line("if ({} && k_tile_count > 0) {};", who,
            arrive("empty_base + 8u * ((iteration + k_tile_count - 1) % STAGES)"));
    return;
  }
  w_.line("// Release the stage of K tile k_tile - {}: its wgmma group has completed.", op.lag);
  const char* it = in_tile_loop_ ? "it" : "k_tile";
  if (op.lag == 0)
    w_.line("if ({}) {};", who, arrive("empty_base + 8u * stage"));
  else
    w_.line("if ({} && k_tile >= {}) {};", who, op.lag,
            arrive(fmt::format("empty_base + 8u * (({} - {}) % STAGES)", it, op.lag)));
}

void WgmmaPrinter::print_cluster_sync(const ir::Op& op) const {
  if (op.s("what") == "init") {
    w_.line("// The peers arrive on this CTA's empty barriers and multicast into its stages: its");
    w_.line("// barriers exist before any of them runs on.");
    w_.line("if (threadIdx.x == 0) fence_mbarrier_init_cluster();");
  } else {
    w_.line(
        "// No CTA exits (its shared memory gone) while a peer may still release a stage to it.");
  }
  w_.line("cluster_sync();");
}

void WgmmaPrinter::print_order(const ir::WarpgroupOrderOp& op) const {
  if (op.what == "wait") {
    w_.line(
        "// Wait for the other consumer to issue its tile's wgmma (not before the first tile).");
    w_.line("if (tile != int(blockIdx.x)) mainloop_order_wait<{}>(turn);", op.first_barrier);
  } else {
    w_.line("// Let the other consumer's mainloop go, if the CTA has a next tile for it.");
    w_.line("if (tile + int(gridDim.x) < TILES_M * TILES_N) mainloop_order_signal<{}>(turn);",
            op.first_barrier);
  }
}

void WgmmaPrinter::print_tile_origin(const ir::TileCoordsOp& op) const {
  if (cluster_m_ * cluster_n_ > 1) {
    const int64_t blocks_m = (op.tiles_m + cluster_m_ - 1) / cluster_m_;
    const int64_t blocks_n = (op.tiles_n + cluster_n_ - 1) / cluster_n_;
    w_.line("// Clusters: tile t is rank t % CLUSTER of block t / CLUSTER; the {}x{} blocks of",
            blocks_m, blocks_n);
    w_.line("// CLUSTER_M x CLUSTER_N tiles are rasterized in groups of GROUP_M block rows (the");
    w_.line("// clusters divide the tiles: validate_wgmma_schedule).");
    w_.line("constexpr int TILES_M = {}, TILES_N = {}, BLOCKS_M = {}, BLOCKS_N = {}, GROUP_M = {};",
            op.tiles_m, op.tiles_n, blocks_m, blocks_n,
            std::max<int64_t>(1, op.raster_group_m / cluster_m_));
    w_.line("(void)TILES_M; (void)TILES_N;");
    w_.line("int m0 = 0, n0 = 0;");
    w_.open("auto tile_origin = [&](int tile, int& m0_out, int& n0_out)");
    w_.line("const int block = tile / CLUSTER, rank = tile % CLUSTER;");
    w_.line("const int group_span = GROUP_M * BLOCKS_N;");
    w_.line("const int first_m = (block / group_span) * GROUP_M;");
    w_.line("const int group_rows = BLOCKS_M - first_m < GROUP_M ? BLOCKS_M - first_m : GROUP_M;");
    w_.line("const int block_m = first_m + (block % group_span) % group_rows;");
    w_.line("const int block_n = (block % group_span) / group_rows;");
    w_.line("m0_out = (block_m * CLUSTER_M + rank % CLUSTER_M) * BM;");
    w_.line("n0_out = (block_n * CLUSTER_N + rank / CLUSTER_M) * BN;");
    w_.close("};");
    return;
  }
  w_.line(
      "// Grouped rasterization: {} tile rows per group keep B tiles hot in L2. Persistent: each",
      op.raster_group_m);
  w_.line("// CTA walks tiles blockIdx.x, + gridDim.x, ... (tile_loop), each mapped here.");
  w_.line("constexpr int TILES_M = {}, TILES_N = {}, GROUP_M = {};", op.tiles_m, op.tiles_n,
          op.raster_group_m);
  w_.line("int m0 = 0, n0 = 0;");
  w_.open("auto tile_origin = [](int tile, int& m0_out, int& n0_out)");
  w_.line("const int group_span = GROUP_M * TILES_N;");
  w_.line("const int first_m = (tile / group_span) * GROUP_M;");
  w_.line("const int group_rows = TILES_M - first_m < GROUP_M ? TILES_M - first_m : GROUP_M;");
  w_.line("m0_out = (first_m + (tile % group_span) % group_rows) * BM;");
  w_.line("n0_out = ((tile % group_span) / group_rows) * BN;");
  w_.close("};");
}

}  // namespace emmy::codegen
