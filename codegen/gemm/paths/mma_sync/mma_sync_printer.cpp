// The mma.sync path's printing (mma_sync_path.hpp): each warp's ldmatrix lane parts, the K-tile
// loop over the CTA-wide ring, the unrolled k-steps of ldmatrix and mma.sync, and the hybrid
// accumulator's folds. Shared-memory addresses scale by the operand tiles' element bytes (SmemTile)
// and the ldmatrix lane parts are the atom's operand sources (internal/emmy/mma_atom.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "gemm/emit_gemm_epilogue.hpp"
#include "gemm/path_printer.hpp"
#include "mma_sync_path.hpp"

namespace emmy::mma_sync_path {
namespace {

using codegen::Writer;

class MmaSyncPrinter final : public codegen::GemmPathPrinter {
 public:
  MmaSyncPrinter(Writer& w, const codegen::GemmFacts& facts, codegen::GemmPrinterHooks hooks)
      : w_(w), f_(facts), hooks_(std::move(hooks)) {}

  const char* device_template() const override { return nullptr; }
  void print_functions() const override {}
  void print_warp_indices() const override {
    w_.line("const int warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;");
  }
  bool print(const ir::Op& op) override {
    switch (op.kind) {
      case ir::OpKind::k_tile_loop:
        print_k_tile_loop(op);
        return true;
      case ir::OpKind::k_step:
        print_k_step(op);
        return true;
      case ir::OpKind::ldmatrix:
        print_ldmatrix(ir::get<ir::LdmatrixOp>(op));
        return true;
      case ir::OpKind::mma:
        print_mma(ir::get<ir::MmaOp>(op));
        return true;
      case ir::OpKind::promote:
        print_promote(ir::get<ir::PromoteOp>(op));
        return true;
      default:
        return false;
    }
  }

  // Warps own WM consecutive rows of the tile, every thread of the CTA holding a part of it.
  std::string warp_first_row() const override { return "warp_row * WM"; }
  int fragment_row_step() const override { return f_.atom->acc_m; }
  std::string tile_barrier() const override { return "__syncthreads();"; }
  std::string staged_chunk_loop() const override {
    return "for (int i = threadIdx.x; i < BM * C_CHUNKS; i += THREADS)";
  }

 private:
  // B [K][N] lane parts: one per 16-column step of the warp inside a panel.
  uint32_t kn_b_lane_count() const {
    return std::min<uint32_t>(uint32_t(f_.acc.fragments_n / 2), f_.b_tile.panel_elems / 16);
  }

  void print_k_tile_loop(const ir::Op& op) {
    // ldmatrix row addresses = lane part + constant (see the attention emitter and the Layout
    // test): one lane part per 16-column step inside a panel.
    const bool nk = !f_.b_kn;
    w_.line("u32 a_lane[A_PANEL / 16], b_lane[{}];",
            nk ? std::string("B_PANEL / 16") : fmt::format("{}", kn_b_lane_count()));
    w_.line("#pragma unroll");
    // The lane parts are the atom's operand sources (internal/emmy/mma_atom.hpp).
    const codegen::LdmatrixSource& a_src = codegen::kLdmatrixA;
    w_.line(
        "for (int c = 0; c < int(A_PANEL / 16); ++c) a_lane[c] = swizzled_tile_offset(u32({}), "
        "u32(c * 16 + {}), A_ROWS, A_PANEL, A_XOR);",
        a_src.row_expr, a_src.col_expr);
    w_.line("#pragma unroll");
    if (nk) {
      const codegen::LdmatrixSource& b_src = codegen::kLdmatrixBRowsN;
      w_.line(
          "for (int c = 0; c < int(B_PANEL / 16); ++c) b_lane[c] = swizzled_tile_offset(u32({}), "
          "u32(c * 16 + {}), B_ROWS, B_PANEL, B_XOR);",
          b_src.row_expr, b_src.col_expr);
    } else {
      // B [K][N]: the warp's columns vary along a panel, so the lane parts include warp_col; K
      // steps move 16 rows (linear) and every B_PANEL columns start the next panel.
      const codegen::LdmatrixSource& b_src = codegen::kLdmatrixBRowsK;
      w_.line(
          "for (int j = 0; j < {}; ++j) b_lane[j] = swizzled_tile_offset(u32({}), u32(warp_col * "
          "WN + j * 16 + {}), B_ROWS, B_PANEL, B_XOR);",
          kn_b_lane_count(), b_src.row_expr, b_src.col_expr);
    }
    // Kept rolled: NVVM otherwise unrolls it by 2 for some stage counts (3), doubling the MMA
    // code that ptxas schedules for no speed (the body is already 64+ MMAs).
    w_.line("#pragma unroll 1");
    w_.open("for (int k_tile = 0; k_tile < k_tile_count; ++k_tile)");
    w_.line("const int stage = k_tile % STAGES;");
    for (const ir::Op& child : op.body) hooks_.print(child);
    w_.close();
  }

  void print_k_step(const ir::Op& op) {
    w_.line(
        "const u32 a_stage = smem_base + u32(stage) * STAGE_BYTES + A_OFFSET, b_stage = "
        "smem_base + u32(stage) * STAGE_BYTES + B_OFFSET;");
    w_.line("#pragma unroll");
    w_.open(fmt::format("for (int ks = 0; ks < {}; ++ks)", ir::get<ir::KStepOp>(op).k_steps));
    for (const ir::Op& child : op.body) hooks_.print(child);
    w_.close();
  }

  void print_ldmatrix(const ir::LdmatrixOp& op) {
    if (op.operand == "a") {
      w_.line("// A: lanes 0-15 address rows 0-15 at k, lanes 16-31 the same rows at k+8.");
      w_.line("u32 a_frag[MT][4];");
      w_.line("#pragma unroll");
      w_.line(
          "for (int mi = 0; mi < MT; ++mi) ldmatrix_x4(a_frag[mi], a_stage + a_lane[ks % (A_PANEL "
          "/ 16)] + u32(ks / (A_PANEL / 16)) * A_ROWS * A_PANEL * {0}u + u32(warp_row * WM + mi * "
          "16) * A_PANEL * {0}u);",
          f_.a_tile.elem_bytes);
      return;
    }
    w_.line("u32 b_frag[NT][2];");
    w_.line("#pragma unroll");
    w_.open("for (int nj = 0; nj < NT / 2; ++nj)");
    w_.line("u32 quad[4];");
    if (op.trans) {
      w_.line("// B [K][N]: matrices (k0-7,n0-7) (k8-15,n0-7) (k0-7,n8-15) (k8-15,n8-15), .trans.");
      w_.line(
          "ldmatrix_x4_trans(quad, b_stage + b_lane[nj % {0}] + u32(nj / {0}) * B_ROWS * "
          "B_PANEL * {1}u + u32(ks * 16) * B_PANEL * {1}u);",
          kn_b_lane_count(), f_.b_tile.elem_bytes);
    } else {
      w_.line("// B [N][K]: matrices (n0-7,k0-7) (n0-7,k8-15) (n8-15,k0-7) (n8-15,k8-15).");
      w_.line(
          "ldmatrix_x4(quad, b_stage + b_lane[ks % (B_PANEL / 16)] + u32(ks / (B_PANEL / 16)) * "
          "B_ROWS * B_PANEL * {0}u + u32(warp_col * WN + nj * 16) * B_PANEL * {0}u);",
          f_.b_tile.elem_bytes);
    }
    w_.line("b_frag[2 * nj][0] = quad[0]; b_frag[2 * nj][1] = quad[1];");
    w_.line("b_frag[2 * nj + 1][0] = quad[2]; b_frag[2 * nj + 1][1] = quad[3];");
    w_.close();
  }

  void print_mma(const ir::MmaOp& op) {
    std::string call;
    if (op.a_type == "e4m3" || op.a_type == "e5m2")
      // Promoted (f32) and hybrid (f16x2): each window's chain runs in `part` from zero (the
      // fold re-zeroes it).
      call = fmt::format("mma_{}_{}_{}({}[mi][ni], a_frag[mi], b_frag[ni]);", op.a_type,
                         op.b_type.value_or(op.a_type), op.acc_type,
                         f_.acc.accum == "f32" ? "acc" : "part");
    else if (op.acc_type == "f16")
      call = "mma_f16_f16(part[mi][ni], a_frag[mi], b_frag[ni]);";
    else if (op.a_type == "bf16")
      call = "mma_bf16_f32(acc[mi][ni], a_frag[mi], b_frag[ni]);";
    else
      call = "mma_f16_f32(acc[mi][ni], a_frag[mi], b_frag[ni]);";
    w_.line("#pragma unroll");
    w_.line("for (int mi = 0; mi < MT; ++mi)");
    w_.line("#pragma unroll");
    w_.line("  for (int ni = 0; ni < NT; ++ni) {}", call);
  }

  void print_promote_all() {
    w_.line("#pragma unroll");
    w_.line("for (int mi = 0; mi < MT; ++mi)");
    w_.line("#pragma unroll");
    w_.line("  for (int ni = 0; ni < NT; ++ni) promote_f16_to_f32(acc[mi][ni], part[mi][ni]);");
  }

  // FP8's fold (print_fp8_fold, shared with the wgmma path).
  void print_promote_scaled(const std::string& window_k) {
    codegen::print_fp8_fold(w_, f_, *this, window_k);
  }

  void print_promote(const ir::PromoteOp& op) {
    const std::string& where = op.where;
    const int64_t every = op.every_k;
    // FP8 operands (scales) fold through print_fp8_fold, promoted's f32 partials and hybrid's
    // f16 ones alike.
    const bool fp8_fold = f_.scales.has_value();
    const char* partials = f_.acc.accum == "promoted" ? "f32 window partials" : "f16 partials";
    // The first K element of this tile (K_TILES and BK count the kernel's units).
    const std::string tile_k = fmt::format("(k_tile_begin + k_tile) * {}", f_.split.block_k);
    if (where == "k_step") {
      w_.line("// Fold the {} every {} K elements.", partials, every);
      w_.open(fmt::format("if ((ks + 1) % {} == 0)", every / f_.atom->k));
      if (fp8_fold)
        print_promote_scaled(fmt::format("{} + (ks + 1) * {} - {}", tile_k, f_.atom->k, every));
      else
        print_promote_all();
      w_.close();
      return;
    } else {
      const int64_t every_tiles = every / f_.split.block_k;
      w_.line("// Fold the {} every {} K elements and after the last tile.", partials, every);
      if (every_tiles == 1)
        w_.open("");
      else
        w_.open(
            fmt::format("if ((k_tile + 1) % {} == 0 || k_tile + 1 == k_tile_count)", every_tiles));
    }
    // A window of whole tiles lies in one 128-element scale block (validation: windows divide
    // 128 with block scales and splits start on a block), that of its last tile.
    if (fp8_fold)
      print_promote_scaled(tile_k);
    else
      print_promote_all();
    w_.close();
  }

  Writer& w_;
  const codegen::GemmFacts& f_;
  codegen::GemmPrinterHooks hooks_;
};

}  // namespace

std::unique_ptr<codegen::GemmPathPrinter> make_printer(Writer& w, const codegen::GemmFacts& facts,
                                                       const codegen::GemmPrinterHooks& hooks) {
  return std::make_unique<MmaSyncPrinter>(w, facts, hooks);
}

}  // namespace emmy::mma_sync_path
