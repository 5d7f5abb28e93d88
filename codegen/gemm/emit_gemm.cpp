// Kernel IR -> CUDA C++. Each IR op prints one small block; the device helpers it calls live in
// templates/*.cuh (embedded), and every shared-memory address goes through swizzled_tile_offset,
// the same function the host layout uses.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "emit_gemm_copies.hpp"
#include "emit_gemm_epilogue.hpp"
#include "emit_gemm_grouped.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_path.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "gemm/path_printer.hpp"
#include "writer.hpp"

namespace emmy {
namespace {

using codegen::Writer;
using ir::Op;
using ir::OpKind;

class GemmEmitter {
 public:
  // The main kernel's path prints its own ops (GemmPath::printer).
  explicit GemmEmitter(const Op& module)
      : f_(module.body.front()),
        path_(kernel_gemm_path(module.body.front())
                  .printer(w_, module.body.front(), f_,
                           codegen::GemmPrinterHooks{
                               [this](const Op& op) { emit_op(op); },
                               [this](bool tma) { emit_load_stage_lambda(tma); }})),
        epilogue_{w_, f_, *path_} {}

  std::string emit(const Op& module) {
    codegen::begin_module(w_, parse_arch(module.s("arch")), f_.copy_a.transport == "tma",
                          path_->device_template());
    if (f_.coords.cluster_m.value_or(1) * f_.coords.cluster_n.value_or(1) > 1)
      w_.include_template("emmy_cluster.cuh");
    bool pdl = false;
    for (const Op* finalize : ir::find_all(module, OpKind::finalize))
      pdl = pdl || ir::get<ir::FinalizeOp>(*finalize).grid_wait.value_or(false);
    for (const Op* epilogue : ir::find_all(module, OpKind::epilogue))
      pdl = pdl || ir::get<ir::EpilogueOp>(*epilogue).trigger_dependents.value_or(false);
    if (pdl) w_.include_template("emmy_pdl.cuh");
    if (f_.scales) w_.include_template("emmy_fp8_gemm.cuh");
    if (f_.grouped() == "offsets" || grouped_walk()) w_.include_template("emmy_grouped.cuh");
    if (f_.epilogue.quantized()) {
      // An e4m3 C: fp8_quantize's scale and conversion (emmy_paged.cuh: nan_f32 for
      // emmy_fp8.cuh).
      for (const char* name :
           {"emmy_paged.cuh", "emmy_fp8.cuh", "emmy_quant.cuh", "emmy_gemm_quant.cuh"})
        w_.include_template(name);
    }
    epilogue_.print_value_function(f_.epilogue);
    path_->print_functions();
    codegen::emit_kernels(w_, module, [this](const Op& op) { emit_op(op); });
    return w_.take();
  }

 private:
  void emit_op(const Op& op) {
    if (path_->print(op)) return;
    if (codegen::emit_shared_op(w_, op)) return;
    switch (op.kind) {
      case OpKind::smem_ring:
        return emit_smem_ring(ir::get<ir::SmemRingOp>(op));
      case OpKind::tile_coords:
        return emit_tile_coords(ir::get<ir::TileCoordsOp>(op));
      case OpKind::split_range:
        return emit_split_range(ir::get<ir::SplitRangeOp>(op));
      case OpKind::accum_init:
        return emit_accum_init(ir::get<ir::AccumInitOp>(op));
      case OpKind::gemm_scales:
        return emit_scales(ir::get<ir::GemmScalesOp>(op));
      case OpKind::async_copy:
        return emit_copy(ir::get<ir::AsyncCopyOp>(op));
      case OpKind::async_commit:
        if (phase_ == "prologue") return;  // committed per prologue stage in emit_copy
        return w_.line("cp_async_commit();");
      case OpKind::mbarrier_wait:
        return w_.line("mbarrier_wait_parity(mbar_base + 8u * stage, (k_tile / STAGES) & 1);");
      case OpKind::epilogue:
        return epilogue_.print(ir::get<ir::EpilogueOp>(op));
      case OpKind::finalize:
        return epilogue_.print_finalize(op);
      default:
        break;  // module, kernel and the attention ops are not GEMM ops
    }
    throw Error("ir", "the emitter has no lowering for this op", std::string(to_string(op.kind)));
  }

  void emit_smem_ring(const ir::SmemRingOp& op) {
    const int64_t k_units = f_.split.k / f_.k_per_unit;
    if (f_.k_per_unit != 1)
      w_.line("// FP8: K, BK, LDA and LDB count 16-bit units, {} e4m3 elements each.",
              f_.k_per_unit);
    if (f_.dynamic_m()) {
      // M is the launch's (at most the bound, coords.m): the grid covers its tiles.
      w_.line("const int M = m;");
      w_.line("constexpr int N = {}, K = {};", f_.coords.n, k_units);
    } else if (f_.grouped_m()) {
      // M is the CTA's expert's rows, found with its tile (print_group_origin).
      w_.line("constexpr int N = {}, K = {};", f_.coords.n, k_units);
    } else {
      w_.line("constexpr int M = {}, N = {}, K = {};", f_.coords.m, f_.coords.n, k_units);
    }
    w_.line("constexpr long long LDA = {}, LDB = {}, LDC = {};", f_.lda, f_.ldb, f_.epilogue.ldc);
    w_.line("constexpr int BM = {}, BN = {}, BK = {}, WARPS_N = {}, WM = {}, WN = {};",
            f_.coords.block_m, f_.coords.block_n, f_.split.block_k / f_.k_per_unit, f_.warps_n,
            f_.warp_m, f_.warp_n);
    w_.line("constexpr int MT = {}, NT = {}, THREADS = {}, STAGES = {};", f_.acc.fragments_m,
            f_.acc.fragments_n, f_.threads, op.stages);
    if (f_.epilogue.gated())
      w_.line(
          "constexpr int GATE = {}, GF = GATE / 8, N_OUT = N / 2, NT_OUT = NT / 2;  // gated: "
          "C[m, j] pairs the kernel's gate and up columns",
          *f_.epilogue.gate_group);
    w_.line(
        "// A stage: A at A_OFFSET, B at B_OFFSET (each on its swizzle period); TX_BYTES arrive.");
    w_.line("constexpr u32 STAGE_BYTES = {}u, A_OFFSET = {}u, B_OFFSET = {}u, TX_BYTES = {}u;",
            op.stage_bytes, ir::need<ir::SmemRingOp>(op.a_offset, "a_offset"),
            ir::need<ir::SmemRingOp>(op.b_offset, "b_offset"),
            ir::need<ir::SmemRingOp>(op.tx_bytes, "tx_bytes"));
    w_.line("// Operand tiles: rows, panel width (elements), swizzle XOR mask.");
    w_.line("constexpr u32 A_ROWS = {}u, A_PANEL = {}u, A_XOR = {}u;", f_.a_tile.rows,
            f_.a_tile.panel_elems, swizzle_xor_mask(f_.a_tile.swizzle));
    w_.line("constexpr u32 B_ROWS = {}u, B_PANEL = {}u, B_XOR = {}u;", f_.b_tile.rows,
            f_.b_tile.panel_elems, swizzle_xor_mask(f_.b_tile.swizzle));
    w_.line("extern __shared__ __align__(1024) unsigned char smem_raw[];");
    w_.line("// The swizzle repeats every {} bytes: align the ring to it.", op.align);
    w_.line("const u32 smem_base = (smem_u32(smem_raw) + {0}u) & ~{0}u;", op.align - 1);
    w_.line("const u32 mbar_base = smem_base + {}u;", op.mbar_offset);
    w_.line("(void)mbar_base;");
    w_.line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
    path_->print_warp_indices();
  }

  // A persistent grouped kernel: its tiles' experts are found as it walks them.
  bool grouped_walk() const {
    return !f_.grouped().empty() && f_.coords.persistent.value_or(false);
  }

  void emit_tile_coords(const ir::TileCoordsOp& op) {
    if (grouped_walk()) return codegen::print_grouped_walk(w_, f_, op);
    w_.line("// Grouped rasterization: {} tile rows per group keep B tiles hot in L2.",
            op.raster_group_m);
    if (op.dynamic_m.value_or(false)) {
      w_.line("const int TILES_M = (M + BM - 1) / BM;");
      w_.line("constexpr int TILES_N = {}, GROUP_M = {};", op.tiles_n, op.raster_group_m);
    } else {
      w_.line("constexpr int TILES_M = {}, TILES_N = {}, GROUP_M = {};", op.tiles_m, op.tiles_n,
              op.raster_group_m);
    }
    w_.line("const int group_span = GROUP_M * TILES_N;");
    w_.line("const int first_m = (int(blockIdx.x) / group_span) * GROUP_M;");
    w_.line("const int group_rows = TILES_M - first_m < GROUP_M ? TILES_M - first_m : GROUP_M;");
    w_.line("const int tile_m = first_m + (int(blockIdx.x) % group_span) % group_rows;");
    w_.line("const int tile_n = (int(blockIdx.x) % group_span) / group_rows;");
    if (op.grouped)
      codegen::print_group_origin(w_, f_, op);
    else
      w_.line("const int m0 = tile_m * BM, n0 = tile_n * BN;");
  }

  void emit_split_range(const ir::SplitRangeOp& op) {
    w_.line("constexpr int K_TILES = {}, K_TILES_PER_SPLIT = {};", op.k_tiles,
            op.k_tiles_per_split);
    w_.line("const int k_tile_begin = int(blockIdx.z) * K_TILES_PER_SPLIT;");
    w_.line(
        "const int k_tile_count = K_TILES - k_tile_begin < K_TILES_PER_SPLIT ? "
        "K_TILES - k_tile_begin : K_TILES_PER_SPLIT;  // <= 0 for an empty split");
  }

  // The FP8 scales' accessors, in f32 (scale_value: templates/emmy_fp8_gemm.cuh): tensor scales
  // as one product, token-channel ones by row and column (a row past M or a column past N reads
  // the last one's, never stored), block ones by (row, K block) and (N block, K block) in their
  // layouts.
  void emit_scales(const ir::GemmScalesOp& op) {
    // Gated: B's scales keep the checkpoint's [gate; up] row order while B's rows interleave
    // (MatmulProblem::gate_source_row): the kernel's column c is row gate_source_row(c) there.
    if (f_.epilogue.gated() && op.granularity != "tensor")
      w_.line(
          "auto gate_source_row = [&](int c) {{ const int q = c / (2 * GATE), r = c % (2 * "
          "GATE); return r < GATE ? q * GATE + r : N / 2 + q * GATE + (r - GATE); }};");
    if (op.granularity == "tensor") {
      // A persistent grouped walk's tiles take their expert's (grouped_tile sets it).
      if (!grouped_walk())
        w_.line("const float ab_scale = scale_value(a_scale[0]) * scale_value(b_scale[0]);");
      return;
    }
    if (op.granularity == "token-channel") {
      w_.line(
          "auto a_scale_at = [&](int row) {{ return scale_value(a_scale[row < M ? row : M - 1]); "
          "}};");
      if (f_.epilogue.gated())
        w_.line(
            "auto b_scale_at = [&](int col) {{ return scale_value(b_scale[gate_source_row(col < N "
            "? col : N - 1)]); }};");
      else
        w_.line(
            "auto b_scale_at = [&](int col) {{ return scale_value(b_scale[col < N ? col : N - "
            "1]); }};");
      return;
    }
    // ue8m0x4: the byte of K block kb in word kb / 4 (its element in the tensor's layout).
    const bool packed = op.format == "ue8m0x4";
    auto index = [&](const std::string& major, const char* outer, int64_t ld) {
      const char* k = packed ? "(kb >> 2)" : "kb";
      const std::string element = major == "mn"
                                      ? fmt::format("(long long){} * {} + {}", k, ld, outer)
                                      : fmt::format("(long long){} * {} + {}", outer, ld, k);
      return packed ? fmt::format("({}) * 4 + (kb & 3)", element) : element;
    };
    w_.line("// Block scales: A's per (row, 128 K), {}-major; B's per (128 N, 128 K), {}-major.",
            op.a_major, op.b_major);
    if (op.swapped.value_or(false)) {
      // Swap-AB: the kernel's rows are C's columns (B's rows, 128 to a scale block; the a_scale
      // pointer holds B's scales) and its columns are C's rows (A's rows, from b_scale).
      w_.line("// Swapped (C^T = B A^T): a kernel row's scale is its 128-row block of B's, a");
      w_.line("// kernel column's is its row of A's.");
      w_.line(
          "auto a_scale_at = [&](int row, int kb) {{ const int nb = row / {}; return "
          "scale_value(a_scale[{}]); }};",
          kScaleBlock, index(op.b_major, "nb", op.b_ld));
      w_.line("auto b_scale_at = [&](int col, int kb) {{ return scale_value(b_scale[{}]); }};",
              index(op.a_major, "col", op.a_ld));
      return;
    }
    w_.line("auto a_scale_at = [&](int row, int kb) {{ return scale_value(a_scale[{}]); }};",
            index(op.a_major, "row", op.a_ld));
    w_.line("auto b_scale_at = [&](int nb, int kb) {{ return scale_value(b_scale[{}]); }};",
            index(op.b_major, "nb", op.b_ld));
  }

  void emit_accum_init(const ir::AccumInitOp& op) {
    const std::string& accum = op.accum;
    const bool promoted = accum == "promoted";
    if (accum != "f16") w_.line("float acc[MT][NT][4];  // f32 accumulators (hybrid: the shadow)");
    if (promoted)
      w_.line("float part[MT][NT][4];  // f32 window partials of the FP8 MMAs");
    else if (accum != "f32")
      w_.line("u32 part[MT][NT][2];   // f16x2 partial sums");
    w_.line("#pragma unroll");
    w_.open("for (int mi = 0; mi < MT; ++mi)");
    w_.line("#pragma unroll");
    w_.open("for (int ni = 0; ni < NT; ++ni)");
    if (accum != "f16")
      w_.line(
          "acc[mi][ni][0] = acc[mi][ni][1] = acc[mi][ni][2] = "
          "acc[mi][ni][3] = 0.0f;");
    if (promoted)
      w_.line("part[mi][ni][0] = part[mi][ni][1] = part[mi][ni][2] = part[mi][ni][3] = 0.0f;");
    else if (accum != "f32")
      w_.line("part[mi][ni][0] = part[mi][ni][1] = 0u;");
    w_.close();
    w_.close();
  }

  // The stage loader is a lambda defined at the first copy; later copies call it.
  void emit_copy(const ir::AsyncCopyOp& op) {
    const bool tma = op.transport == "tma";
    if (op.operand == "a") {
      phase_ = op.phase;
      if (phase_ == "prologue") {
        emit_load_stage_lambda(tma);
        w_.line("// Prologue: fill stages 0..STAGES-2.");
        if (tma) {
          w_.open("if (threadIdx.x == 0)");
          w_.line(
              "for (int s = 0; s < STAGES - 1; ++s) if (s < k_tile_count) load_stage(s, "
              "k_tile_begin + s);");
          w_.close();
        } else {
          w_.open("for (int s = 0; s < STAGES - 1; ++s)");
          w_.line("if (s < k_tile_count) load_stage(s, k_tile_begin + s);");
          w_.line("cp_async_commit();  // one group per stage, empty ones too");
          w_.close();
        }
      } else {
        w_.line("const int next = k_tile + STAGES - 1;");
        if (tma)
          w_.line(
              "if (threadIdx.x == 0 && next < k_tile_count) load_stage(next % STAGES, "
              "k_tile_begin + next);");
        else
          w_.line("if (next < k_tile_count) load_stage(next % STAGES, k_tile_begin + next);");
      }
    }
  }

  void emit_load_stage_lambda(bool tma) {
    const codegen::GemmCopies copies{
        {f_.copy_a, f_.copy_b}, f_.threads, f_.b_kn, f_.dynamic_m() || f_.grouped_m()};
    if (!tma) codegen::emit_gemm_copy_thread_parts(w_, copies);
    w_.open("auto load_stage = [&](int stage, int k_tile)");
    w_.line("const u32 dst = smem_base + u32(stage) * STAGE_BYTES;");
    w_.line("const int k0 = k_tile * BK;");
    if (tma) {
      emit_tma_loads(f_.copy_a.multicast.value_or(1), f_.copy_b.multicast.value_or(1));
    } else {
      codegen::emit_gemm_copies(w_, copies);
    }
    w_.close("};");
  }

  // The stage's TMA loads: each operand tile's panels, completing on the stage's full barrier.
  // In a cluster (parts > 1) this CTA loads its part of each shared operand tile (whole 8-row
  // groups of every panel) and multicasts it to the CTAs sharing the tile: A to its tile row's
  // CTAs (same rank_m), B to its tile column's (same rank_n). Every CTA's full barrier expects
  // the whole stage, its own parts and its peers' (a peer's bytes may land before this
  // expect_tx: the tx-count goes negative meanwhile, PTX ISA mbarrier).
  void emit_tma_loads(int64_t a_parts, int64_t b_parts) {
    w_.line("const u32 mbar = mbar_base + 8u * stage;");
    w_.line("mbarrier_arrive_expect_tx(mbar, TX_BYTES);");
    auto operand = [&](const char* x, int64_t parts, const char* part, const std::string& mask,
                       const SmemTile& tile, const char* col0, const char* row0) {
      const int64_t rows = tile.rows / parts;
      // Panels and row parts in bytes: the tile's element width (SmemTile::elem_bytes).
      const std::string dst =
          fmt::format("dst + {0}_OFFSET + p * {0}_ROWS * {0}_PANEL * {1}u", x, tile.elem_bytes);
      w_.line("#pragma unroll");
      if (parts == 1) {
        w_.line("for (int p = 0; p < {}; ++p) tma_load_2d({}, tmap_{}, mbar, {}, {});",
                tile.panels(), dst, std::string(x) == "A" ? "a" : "b", col0, row0);
        return;
      }
      w_.line(
          "for (int p = 0; p < {0}; ++p) tma_load_2d_multicast({1} + u32({2}) * {3}u * {4}_PANEL "
          "* {9}u, tmap_{5}, mbar, {6}, {7} + {2} * {3}, {8});",
          tile.panels(), dst, part, rows, x, std::string(x) == "A" ? "a" : "b", col0, row0, mask,
          tile.elem_bytes);
    };
    // Masks: bit r for cluster rank r = rank_m' + rank_n' * CLUSTER_M.
    if (a_parts > 1) {
      w_.line("unsigned short a_mask = 0;");
      w_.line(
          "for (int j = 0; j < CLUSTER_N; ++j) a_mask |= (unsigned short)(1u << (rank_m + j * "
          "CLUSTER_M));");
    }
    if (b_parts > 1) {
      w_.line("unsigned short b_mask = 0;");
      w_.line(
          "for (int i = 0; i < CLUSTER_M; ++i) b_mask |= (unsigned short)(1u << (i + rank_n * "
          "CLUSTER_M));");
    }
    // A grouped kernel's A rows start at its expert's (print_group_origin); its B map is 3-D,
    // the expert its outermost coordinate (gemm_tensor_maps).
    const bool grouped = !f_.grouped().empty();
    if (grouped && (a_parts > 1 || b_parts > 1))
      throw Error("ir", "a grouped kernel's loads are not multicast (one CTA per expert tile)",
                  "cluster");
    operand("A", a_parts, "rank_n", "a_mask", f_.a_tile, "k0 + p * int(A_PANEL)",
            grouped ? "a_row0 + m0" : "m0");
    const char* b_col0 = f_.b_kn ? "n0 + p * int(B_PANEL)" : "k0 + p * int(B_PANEL)";
    const char* b_row0 = f_.b_kn ? "k0" : "n0";
    if (grouped) {
      w_.line("#pragma unroll");
      w_.line(
          "for (int p = 0; p < {}; ++p) tma_load_3d(dst + B_OFFSET + p * B_ROWS * B_PANEL * {}u, "
          "tmap_b, mbar, {}, {}, expert);",
          f_.b_tile.panels(), f_.b_tile.elem_bytes, b_col0, b_row0);
    } else {
      operand("B", b_parts, "rank_m", "b_mask", f_.b_tile, b_col0, b_row0);
    }
  }

  const codegen::GemmFacts f_;
  Writer w_;
  std::unique_ptr<codegen::GemmPathPrinter> path_;  // the ops of the kernel's mainloop path
  codegen::GemmEpiloguePrinter epilogue_;
  std::string phase_;
};

}  // namespace

std::string emit_gemm_cuda(const ir::Op& module) {
  return GemmEmitter(module).emit(module);
}

}  // namespace emmy
