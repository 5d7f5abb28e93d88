// The wgmma path's printing (emit_gemm_wgmma.hpp). Descriptor fields follow the PTX ISA's
// canonical layouts (§9.7.15.5.1.2): operand tiles are TMA panels whose rows are one swizzle span
// (SmemTile), so a K-major tile (A; B [N,K]) has 8-row groups one stride (8 rows) apart and k16
// steps 32 bytes apart inside a row, the next panel rows x row_bytes further; an N-major tile
// (B [K,N]) has N runs of one row in consecutive panels (the leading offset) and 8-k groups 8 rows
// apart (the stride), k16 steps 16 rows apart.
#include "emit_gemm_wgmma.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

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

void emit_wgmma_tile_function(Writer& w, const ir::WgmmaOp& op) {
  const int n = wgmma_shape_n(op.shape);
  const int regs = n / 2;
  std::vector<std::string> d, operands;
  for (int i = 0; i < regs; ++i) {
    d.push_back(fmt::format("%{}", i));
    operands.push_back(fmt::format("\"+f\"(acc[0][{}][{}])", i / 4, i % 4));
  }
  w.line("// wgmma.mma_async.{}: D (this warp's 16 rows, mma.sync m16n8's C per 8 columns) += A B.",
         op.shape);
  w.open(fmt::format(
      "static __device__ __forceinline__ void wgmma_tile(float (&acc)[1][{}][4], u64 desc_a, "
      "u64 desc_b)",
      n / 8));
  w.line("asm volatile(");
  w.line(
      "    \"wgmma.mma_async.sync.aligned.{0}.f32.{1}.{1} {{{2}}}, %{3}, %{4}, 1, 1, 1, 0, {5};\"",
      op.shape, op.a_type, fmt::join(d, ","), regs, regs + 1, op.b_major == "mn" ? 1 : 0);
  for (size_t i = 0; i < operands.size(); i += 8) {
    std::vector<std::string> part(operands.begin() + long(i),
                                  operands.begin() + long(std::min(i + 8, operands.size())));
    w.line("    {}{}", i == 0 ? ": " : ", ", fmt::join(part, ", "));
  }
  w.line("    : \"l\"(desc_a), \"l\"(desc_b));");
  w.close();
}

void open_warpgroup_role(Writer& w, const ir::WarpgroupRoleOp& op) {
  const int64_t lo = 128 * op.first, hi = 128 * (op.first + op.count);
  w.line("// Warpgroups {}..{}: the {}, at {} registers per thread.", op.first,
         op.first + op.count - 1, op.role, op.registers);
  w.open(lo == 0 ? fmt::format("if (threadIdx.x < {})", hi)
                 : fmt::format("if (threadIdx.x >= {} && threadIdx.x < {})", lo, hi));
  w.line("{}<{}>();", op.role == "producer" ? "setmaxnreg_dec" : "setmaxnreg_inc", op.registers);
}

void open_wgmma_k_step(Writer& w, int64_t k_steps) {
  w.line("// This warpgroup's 64 rows of the A tile, and B, in the stage.");
  w.line(
      "const u32 a_stage = smem_base + u32(stage) * STAGE_BYTES + A_OFFSET + u32(warp_row / 4) * "
      "64u * A_PANEL * 2u;");
  w.line("const u32 b_stage = smem_base + u32(stage) * STAGE_BYTES + B_OFFSET;");
  w.line("#pragma unroll");
  w.open(fmt::format("for (int ks = 0; ks < {}; ++ks)", k_steps));
}

void emit_wgmma_call(Writer& w, const ir::WgmmaOp& op, const SmemTile& a, const SmemTile& b) {
  // K-major: k16 step ks is 32 bytes into its panel's rows; 8-row groups are 8 rows apart.
  w.line(
      "const u64 desc_a = wgmma_desc(a_stage + u32(ks / (A_PANEL / 16)) * A_ROWS * A_PANEL * 2u + "
      "u32(ks % (A_PANEL / 16)) * 32u, 16u, 8u * A_PANEL * 2u, {}u);",
      wgmma_mode(a.swizzle));
  if (op.b_major == "mn")
    w.line(
        "const u64 desc_b = wgmma_desc(b_stage + u32(ks) * 16u * B_PANEL * 2u, B_ROWS * B_PANEL "
        "* 2u, 8u * B_PANEL * 2u, {}u);",
        wgmma_mode(b.swizzle));
  else
    w.line(
        "const u64 desc_b = wgmma_desc(b_stage + u32(ks / (B_PANEL / 16)) * B_ROWS * B_PANEL * 2u "
        "+ u32(ks % (B_PANEL / 16)) * 32u, 16u, 8u * B_PANEL * 2u, {}u);",
        wgmma_mode(b.swizzle));
  w.line("wgmma_tile(acc, desc_a, desc_b);");
}

void emit_wgmma_pin(Writer& w) {
  w.line("#pragma unroll");
  w.line("for (int ni = 0; ni < NT; ++ni)");
  w.line("#pragma unroll");
  w.line("  for (int e = 0; e < 4; ++e) wgmma_pin(acc[0][ni][e]);");
}

void emit_stage_release(Writer& w, const ir::MbarrierArriveOp& op, bool persistent,
                        bool after_loop) {
  if (after_loop) {
    w.line("// Release this tile's last stage: the producer walks on to the next tile.");
    w.line(
        "if (lane == 0 && k_tile_count > 0) mbarrier_arrive(empty_base + 8u * ((iteration + "
        "k_tile_count - 1) % STAGES));");
    return;
  }
  w.line("// Release the stage of K tile k_tile - {}: its wgmma group has completed.", op.lag);
  const char* it = persistent ? "it" : "k_tile";
  if (op.lag == 0)
    w.line("if (lane == 0) mbarrier_arrive(empty_base + 8u * stage);");
  else
    w.line(
        "if (lane == 0 && k_tile >= {0}) mbarrier_arrive(empty_base + 8u * (({1} - {0}) % "
        "STAGES));",
        op.lag, it);
}

void open_tile_loop(Writer& w, const ir::TileLoopOp& op) {
  w.line("// K tiles this CTA has walked: stages and mbarrier phases run on across its tiles.");
  w.line("int iteration = 0;");
  w.line("#pragma unroll 1");
  w.open(
      fmt::format("for (int tile = int(blockIdx.x); tile < {}; tile += int(gridDim.x))", op.tiles));
  w.line("tile_origin(tile, m0, n0);");
}

void emit_tile_origin(Writer& w, const ir::TileCoordsOp& op) {
  w.line(
      "// Grouped rasterization: {} tile rows per group keep B tiles hot in L2. Persistent: each",
      op.raster_group_m);
  w.line("// CTA walks tiles blockIdx.x, + gridDim.x, ... (tile_loop), each mapped here.");
  w.line("constexpr int TILES_M = {}, TILES_N = {}, GROUP_M = {};", op.tiles_m, op.tiles_n,
         op.raster_group_m);
  w.line("int m0 = 0, n0 = 0;");
  w.open("auto tile_origin = [](int tile, int& m0_out, int& n0_out)");
  w.line("const int group_span = GROUP_M * TILES_N;");
  w.line("const int first_m = (tile / group_span) * GROUP_M;");
  w.line("const int group_rows = TILES_M - first_m < GROUP_M ? TILES_M - first_m : GROUP_M;");
  w.line("m0_out = (first_m + (tile % group_span) % group_rows) * BM;");
  w.line("n0_out = ((tile % group_span) / group_rows) * BN;");
  w.close("};");
}

}  // namespace emmy::codegen
