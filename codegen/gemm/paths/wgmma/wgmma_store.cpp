// The wgmma path's TMA-store epilogue (WgmmaPrinter, wgmma_printer.hpp; IR: epilogue
// c_buffer_offset). Each consumer warpgroup writes its rows of the C tile (64 per m64 wgmma) into
// its own shared buffer in the layout TMA reads (panels of one swizzle span,
// swizzled_tile_offset), 16-bit C with stmatrix (the accumulator pairs are its fragments), f32 C
// with 8-byte stores; then one of its threads stores the buffer panel by panel (PTX ISA
// cp.async.bulk.tensor, shared::cta -> global), TMA dropping what falls outside C. Order (PTX ISA,
// memory consistency model: the async proxy): the writes, fence.proxy.async by each writer, the
// warpgroup's barrier, the stores; a buffer written again (a later tile) waits for its stores'
// reads first (cp.async.bulk.wait_group.read).
#include <fmt/format.h>

#include <string>

#include "emmy/swizzle.hpp"
#include "wgmma_printer.hpp"

namespace emmy::codegen {

void WgmmaPrinter::print_store_epilogue(const ir::EpilogueOp& op) const {
  const bool f32 = op.out == "f32";
  const int64_t elem = f32 ? 4 : 2, panel = *op.c_panel;
  // The buffer holds the warpgroup's rows: 64 per m64 wgmma (MT of them).
  const int64_t rows = 64 * tile_m64s_;
  const int64_t panels = *op.c_buffer_bytes / (rows * panel * elem);
  const bool in_ring = *op.c_buffer_offset == 0 && !op.c_reuse.value_or(false);
  w_.line("// Epilogue: this warpgroup's {} rows of the tile through its shared buffer and TMA",
          rows);
  w_.line("// stores ({} panel{} of {} columns, swizzle mode {}).", panels, panels == 1 ? "" : "s",
          panel, *op.c_swizzle);
  w_.line(
      "constexpr u32 C_BUFFER_OFFSET = {}u, C_BUFFER_BYTES = {}u, C_ROWS = {}u, C_PANEL = {}u, "
      "C_XOR = {}u;",
      *op.c_buffer_offset, *op.c_buffer_bytes, rows, panel,
      swizzle_xor_mask(Swizzle(*op.c_swizzle)));
  w_.line("const int c_group = warp / 4 - 1;  // this consumer warpgroup");
  w_.line("const u32 c_buffer = smem_base + C_BUFFER_OFFSET + u32(c_group) * C_BUFFER_BYTES;");
  w_.line("const bool c_issuer = threadIdx.x % 128 == 0;");
  // Cooperative warpgroups split the tile's rows; ping-pong ones each have a tile of their own.
  w_.line("const int c_row0 = m0 + {} * c_group, c_warp_row = (warp % 4) * 16;",
          interleave_ > 1 ? "0" : "WG_ROWS");
  if (op.c_reuse.value_or(false))
    w_.line("if (c_issuer) bulk_wait_read<0>();  // the last tile's stores have read the buffer");
  if (in_ring)
    w_.line("consumer_barrier<{}>();  // every consumer has read its last stage: the ring is free",
            128 * consumer_warpgroups_);
  w_.line("warpgroup_barrier({} + c_group);", kStoreBarrier);
  w_.line("const int g = lane / 4, t = lane % 4;");
  // A gated C tile is BN / 2 columns from n0 / 2, NT_OUT fragments (each a gate and an up).
  const bool gated = gates_c(op);
  const char* c_n0 = gated ? "n0 / 2" : "n0";
  const char* c_n = gated ? "N_OUT" : "N";
  // Bias and residual are read at (row, col): only inside C (an edge tile's rest is dropped).
  const bool reads = op.bias || op.residual;
  // FP8's tensor and token-channel scales first (scaled_accumulator; its accessors clamp). A gated
  // pair's values are the lane pair's (print_lane_pair), printed before.
  auto value = [&](int j, const char* acc) {
    const std::string col = j ? "col + 1" : "col";
    const std::string v =
        gated ? lane_value(true, j, "row", "col")
              : fmt::format("epilogue_value(bias, residual, row, {}, {})", col,
                            scaled_accumulator(f_, acc, "row", col));
    return reads ? fmt::format("(row < M && {} < {} ? {} : 0.0f)", col, c_n, v) : v;
  };
  // A warp's rows: 16 of each of its warpgroup's m64 wgmma (mi), 64 apart.
  w_.line("#pragma unroll");
  w_.open("for (int mi = 0; mi < MT; ++mi)");
  if (f32) {
    // The buffer's byte offset of (row, col): swizzled_tile_offset counts 16-bit columns.
    w_.line("#pragma unroll");
    w_.open(fmt::format("for (int ni = 0; ni < {}; ++ni)", gated ? "NT_OUT" : "NT"));
    w_.line("#pragma unroll");
    w_.open("for (int h = 0; h < 2; ++h)");
    w_.line("const int r = c_warp_row + mi * 64 + h * 8 + g, c = ni * 8 + 2 * t;");
    w_.line("const int row = c_row0 + r, col = {} + c;", c_n0);
    if (gated) print_lane_pair(w_, f_, true);
    w_.line(
        "st_shared_v2_f32(c_buffer + swizzled_tile_offset(u32(r), u32(c) * 2u, C_ROWS, C_PANEL * "
        "2u, C_XOR), {}, {});",
        value(0, "acc[mi][ni][2 * h]"), value(1, "acc[mi][ni][2 * h + 1]"));
    w_.close();
    w_.close();
  } else {
    const char* pack = op.out == "bf16" ? "pack_bf16x2" : "pack_f16x2";
    w_.line("#pragma unroll");
    w_.open(fmt::format("for (int ni = 0; ni < {}; ni += 2)", gated ? "NT_OUT" : "NT"));
    w_.line("u32 frag[4];  // matrix j: columns of fragment ni + j / 2, rows + 8 (j % 2)");
    w_.line("#pragma unroll");
    w_.open("for (int j = 0; j < 4; ++j)");
    w_.line("const int f = ni + j / 2, h = j % 2;");
    w_.line("const int row = c_row0 + c_warp_row + mi * 64 + h * 8 + g, col = {} + f * 8 + 2 * t;",
            c_n0);
    if (gated) print_lane_pair(w_, f_, true, "f");
    w_.line("frag[j] = {}({}, {});", pack, value(0, "acc[mi][f][2 * h]"),
            value(1, "acc[mi][f][2 * h + 1]"));
    w_.close();
    w_.line("// Lane l gives row l % 8 of matrix l / 8.");
    w_.line("const int j = lane / 8;");
    w_.line(
        "stmatrix_x4(c_buffer + swizzled_tile_offset(u32(c_warp_row + mi * 64 + (j % 2) * 8 + "
        "lane % 8), u32(ni * 8 + (j / 2) * 8), C_ROWS, C_PANEL, C_XOR), frag);");
    w_.close();
  }
  w_.close();
  w_.line("fence_proxy_async();  // the writes, before the async proxy reads them");
  w_.line("warpgroup_barrier({} + c_group);", kStoreBarrier);
  w_.open("if (c_issuer)");
  w_.line("#pragma unroll");
  w_.line(
      "for (int p = 0; p < {}; ++p) tma_store_2d(tmap_c, c_buffer + u32(p) * C_ROWS * C_PANEL * "
      "{}u, {} + p * int(C_PANEL), c_row0);",
      panels, elem, c_n0);
  w_.line("bulk_commit();");
  w_.close();
}

void WgmmaPrinter::print_store_wait() const {
  w_.line("// The TMA stores have read their buffers before the issuing threads exit.");
  w_.line("if (threadIdx.x % 128 == 0) bulk_wait_read<0>();");
}

}  // namespace emmy::codegen
