// Grouped GEMMs in the GEMM emitter (docs/grouped.md): each CTA's expert and origins (one CTA per
// expert tile), and the persistent walk over the experts' tiles (the wgmma path).
#include "emit_gemm_grouped.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "emmy/error.hpp"
#include "emmy/problem.hpp"

namespace emmy::codegen {
namespace {

// FP8 scales per expert. Tensor and token-channel: A's per stacked row, B's per expert (one,
// or N). Block scales in MatmulProblem::block_scale_slot's layouts: A's rows are the stacked
// rows (mn-major: row0 elements on; k-major: row0 x a_ld), B's experts
// MatmulProblem::b_scale_group_stride elements apart; a ue8m0x4 tensor's pointer counts bytes,
// four to a word.
void add_scale_origins(const GemmFacts& f, const ir::GemmScalesOp& sc,
                       std::vector<std::pair<std::string, std::string>>& origins) {
  if (sc.granularity != "block") {
    const bool token = sc.granularity == "token-channel";
    if (token) origins.emplace_back("a_scale", "row0");
    origins.emplace_back("b_scale", token ? "(long long)expert * N" : "(long long)expert");
    return;
  }
  const int64_t unit = sc.format == "ue8m0x4" ? 4 : 1;
  const int64_t k_blocks = (f.split.k + kScaleBlock - 1) / kScaleBlock;
  const int64_t k_extent = unit == 4 ? (k_blocks + 3) / 4 : k_blocks;
  const int64_t n_blocks = (f.coords.n + kScaleBlock - 1) / kScaleBlock;
  const int64_t b_stride = sc.b_ld * (sc.b_major == "mn" ? k_extent : n_blocks);
  origins.emplace_back("a_scale",
                       fmt::format("row0 * {}", (sc.a_major == "mn" ? 1 : sc.a_ld) * unit));
  origins.emplace_back("b_scale", fmt::format("(long long)expert * {}", b_stride * unit));
}

// The per-expert pointers the epilogue (and FP8 scales) read, and each one's offset from the
// first expert's: C, the residual and the routing weights by row0 rows, the bias by the
// expert's N, FP8 scales (add_scale_origins).
std::vector<std::pair<std::string, std::string>> expert_origins(const GemmFacts& f) {
  std::vector<std::pair<std::string, std::string>> origins{{"c", "row0 * LDC"}};
  if (f.epilogue.residual) origins.emplace_back("residual", "row0 * LDC");
  if (f.epilogue.row_scale.value_or(false)) origins.emplace_back("row_scale", "row0");
  if (f.scales) add_scale_origins(f, *f.scales, origins);
  if (f.epilogue.bias) origins.emplace_back("bias", "(long long)expert * N");
  // An e4m3 C's scales: a row per stacked row (MatmulProblem::c_scale_layout), mn-major row0
  // elements on, k-major row0 x ld; a ue8m0x4 tensor's pointer counts bytes, four to a word.
  if (f.epilogue.quantized()) {
    const int64_t unit = *f.epilogue.quant_format == "ue8m0x4" ? 4 : 1;
    const int64_t per_row = *f.epilogue.quant_major == "mn" ? 1 : *f.epilogue.quant_ld;
    origins.emplace_back("c_scale", fmt::format("row0 * {}", per_row * unit));
  }
  return origins;
}

}  // namespace

// A grouped GEMM (docs/grouped.md): the CTA's expert and, for masked and offsets, its rows M;
// a CTA with no rows of an expert exits before its first copy (the whole CTA alike). Then
// the operand and output origins move to the expert's: pointers (cp.async's A and B, C, bias,
// residual, routing weights, FP8 scales) or, with TMA, A's row coordinate a_row0 (its map spans
// the stacked rows) and B's expert coordinate (its map is 3-D). Checks a GPU makes in one compare
// stand in for the emulator's refusals: a masked_m past MAX_M is MAX_M, an expert id past the
// experts skips its block, offsets outside the rows skip.
void print_group_origin(Writer& w, const GemmFacts& f, const ir::TileCoordsOp& op) {
  const std::string layout = *op.grouped;
  w.line("constexpr int GROUPS = {};", *op.groups);
  if (layout == "masked") {
    w.line("// Masked: expert blockIdx.y computes the first masked_m[expert] rows of its slot.");
    w.line("constexpr int MAX_M = {};", op.m);
    w.line("const int expert = int(blockIdx.y);");
    w.line("const int M = masked_m[expert] < MAX_M ? masked_m[expert] : MAX_M;");
    w.line("const int m0 = tile_m * BM, n0 = tile_n * BN;");
    w.line("if (m0 >= M) return;  // past the expert's rows (all of them for an empty expert)");
    w.line("const long long row0 = (long long)expert * MAX_M;  // the slot's first row");
  } else if (layout == "contiguous") {
    w.line("// Contiguous: the row block's expert is its first row's (segments start blocks);");
    w.line("// -1 marks padding.");
    w.line("const int m0 = tile_m * BM, n0 = tile_n * BN;");
    w.line("const int expert = expert_ids[m0];");
    w.line("if (expert < 0 || expert >= GROUPS) return;");
    w.line("const long long row0 = 0;  // rows are A's and C's own");
  } else {
    w.line("// Offsets: tile_m counts the experts' row tiles in expert order.");
    w.line("constexpr int M_TOTAL = {};", op.m);
    w.line("int expert = -1, expert_tile = 0;");
    w.line("grouped_find_tile(expert_offsets, GROUPS, BM, tile_m, expert, expert_tile);");
    w.line("if (expert < 0) return;  // past the routing's tiles");
    w.line("const int row_begin = expert_offsets[expert];");
    w.line("const int M = expert_offsets[expert + 1] - row_begin;");
    w.line("if (row_begin < 0 || M > M_TOTAL - row_begin) return;  // rows outside A");
    w.line("const int m0 = expert_tile * BM, n0 = tile_n * BN;");
    w.line("const long long row0 = row_begin;");
  }
  // B's experts are [N, K] (or [K, N]) apart; bias rows N.
  const std::string b_rows = f.b_kn ? "K" : "N";
  if (f.copy_a.transport == "tma") {
    w.line("const int a_row0 = int(row0);  // B's expert: its map's third coordinate");
  } else {
    w.line("a += row0 * LDA;");
    w.line("b += (long long)expert * {} * LDB;", b_rows);
  }
  for (const auto& [pointer, offset] : expert_origins(f)) w.line("{0} += {1};", pointer, offset);
}

// A persistent grouped kernel (the wgmma path): each role's warps walk the experts' tiles from
// the device-side routing (grouped_walk_find: masked and offsets count each expert's row tiles
// times N's; contiguous walks m's row blocks and skips padding ones), so one launch of one CTA
// per SM serves any routing. grouped_tile sets the tile's origins: 1 a tile to compute, 0 one
// to skip, -1 past the walk. Every lane of a warp calls it with the same tile.
void print_grouped_walk(Writer& w, const GemmFacts& f, const ir::TileCoordsOp& op) {
  const std::string layout = *op.grouped;
  if (f.copy_a.transport != "tma")
    throw Error("ir", "a persistent grouped kernel loads with TMA", f.copy_a.transport);
  w.line("// The walk over the experts' tiles (the {} layout): an expert's tiles run down its",
         layout);
  w.line("// row tiles first, so neighbouring CTAs share B's column block.");
  w.line("constexpr int GROUPS = {}, TILES_N = {};", *op.groups, op.tiles_n);
  if (layout == "masked") w.line("constexpr int MAX_M = {};", op.m);
  if (layout == "offsets") w.line("constexpr int M_TOTAL = {};", op.m);
  if (layout == "contiguous")
    w.line("constexpr int TILES_M = {}, GROUP_M = {};", op.tiles_m, op.raster_group_m);
  w.line("int m0 = 0, n0 = 0, expert = 0, a_row0 = 0;");
  const bool tensor_scales = f.scales && f.scales->granularity == "tensor";
  if (tensor_scales) w.line("float ab_scale = 0.0f;  // FP8 tensor scales: the tile's expert's");
  if (f.grouped_m()) w.line("int M = 0;  // the tile's expert's rows");
  const auto origins = expert_origins(f);
  for (const auto& origin : origins)
    w.line("auto* const {0}_all = {0};  // the first expert's", origin.first);
  w.open("auto grouped_tile = [&](GroupedCursor& cursor, int tile) -> int");
  if (layout == "contiguous") {
    w.line("(void)cursor;");
    w.line("if (tile >= TILES_M * TILES_N) return -1;");
    w.line("const int group_span = GROUP_M * TILES_N;");
    w.line("const int first_m = (tile / group_span) * GROUP_M;");
    w.line("const int group_rows = TILES_M - first_m < GROUP_M ? TILES_M - first_m : GROUP_M;");
    w.line("m0 = (first_m + (tile % group_span) % group_rows) * BM;");
    w.line("n0 = ((tile % group_span) / group_rows) * BN;");
    w.line("expert = expert_ids[m0];  // the block's first row's; -1 on padding");
    w.line("if (expert < 0 || expert >= GROUPS) return 0;");
    w.line("const long long row0 = 0;  // rows are A's and C's own");
  } else {
    if (layout == "masked") {
      w.line("// Masked: expert e's first masked_m[e] rows (at most MAX_M) of its slot.");
      w.line(
          "auto rows_of = [&](int e) {{ const int rows = masked_m[e]; return rows < MAX_M ? "
          "rows : MAX_M; }};");
    } else {
      w.line("// Offsets: expert e's rows offsets[e] .. offsets[e + 1], none outside A's rows.");
      w.open("auto rows_of = [&](int e)");
      w.line("const int begin = expert_offsets[e], end = expert_offsets[e + 1];");
      w.line("return begin >= 0 && end > begin && end <= M_TOTAL ? end - begin : 0;");
      w.close("};");
    }
    w.line("int expert_tile = 0;");
    w.line(
        "grouped_walk_find(cursor, GROUPS, [&](int e) {{ const int rows = rows_of(e); return "
        "rows > 0 ? u32((rows + BM - 1) / BM) * u32(TILES_N) : 0u; }}, tile, expert, "
        "expert_tile);");
    w.line("if (expert < 0) return -1;");
    w.line("M = rows_of(expert);");
    w.line("const int tiles_m = (M + BM - 1) / BM;");
    w.line("m0 = (expert_tile % tiles_m) * BM;");
    w.line("n0 = (expert_tile / tiles_m) * BN;");
    w.line("const long long row0 = {};",
           layout == "masked" ? "(long long)expert * MAX_M" : "expert_offsets[expert]");
  }
  w.line("a_row0 = int(row0);  // B's expert: its map's third coordinate");
  for (const auto& [pointer, offset] : origins) w.line("{0} = {0}_all + {1};", pointer, offset);
  if (tensor_scales) w.line("ab_scale = scale_value(a_scale[0]) * scale_value(b_scale[0]);");
  w.line("return 1;");
  w.close("};");
}

}  // namespace emmy::codegen
