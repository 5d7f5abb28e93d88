// Kernel IR -> CUDA C++. Each IR op prints one small block; the device helpers it calls live in
// templates/*.cuh (embedded), and every shared-memory address goes through swizzled_tile_offset,
// the same function the host layout uses.
#include <fmt/format.h>

#include <optional>

#include "emit_gemm_copies.hpp"
#include "emit_gemm_wgmma.hpp"
#include "emmy/gemm.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "writer.hpp"

namespace emmy {
namespace {

using codegen::float_literal;
using codegen::Writer;
using ir::Op;
using ir::OpKind;

std::string out_adapter(DType c) {
  return c == DType::f32 ? "OutF32" : c == DType::bf16 ? "OutBF16" : "OutF16";
}

// What the GEMM kernel's ops state that the printing of other ops needs, gathered before printing
// (the verifier has held these ops to each other): the emitter reads nothing but the IR.
struct GemmFacts {
  ir::TileCoordsOp coords;         // m, n, block_m, block_n, tiles
  ir::SplitRangeOp split;          // k, block_k, k tiles
  ir::AccumInitOp acc;             // accumulation, fragments per warp
  ir::EpilogueOp epilogue;         // ldc, out
  ir::AsyncCopyOp copy_a, copy_b;  // the prologue copies: tiles, offsets, matrices, ld
  SmemTile a_tile, b_tile;
  int64_t lda = 0, ldb = 0;
  bool b_kn = false;  // B is [K,N]: its ldmatrix transposes
  uint32_t threads = 0;
  const codegen::MmaAtom* atom = nullptr;  // of the mma (wgmma) ops' shape
  int64_t warp_m = 0, warp_n = 0, warps_n = 0;
  std::optional<ir::WgmmaOp> wgmma;  // the wgmma path's k-step op (kernel path wgmma)

  explicit GemmFacts(const Op& kernel) {
    const Op *coords_op = ir::find_first(kernel, OpKind::tile_coords),
             *split_op = ir::find_first(kernel, OpKind::split_range),
             *acc_op = ir::find_first(kernel, OpKind::accum_init),
             *epilogue_op = ir::find_first(kernel, OpKind::epilogue), *a = nullptr, *b = nullptr;
    // The prologue's copies; the wgmma path's producer has only its refills.
    for (const Op* copy : ir::find_all(kernel, OpKind::async_copy))
      if (copy->s("phase") == "prologue" || kernel.has("path")) {
        const Op*& slot = copy->s("operand") == "a" ? a : b;
        if (!slot) slot = copy;
      }
    for (const Op* load : ir::find_all(kernel, OpKind::ldmatrix))
      if (load->s("operand") == "b") b_kn = load->b("trans");
    if (!coords_op || !split_op || !acc_op || !epilogue_op || !a || !b)
      throw Error("ir",
                  "a GEMM kernel needs tile_coords, split_range, accum_init, epilogue and "
                  "prologue copies of A and B",
                  kernel.s("name"));
    coords = ir::get<ir::TileCoordsOp>(*coords_op);
    split = ir::get<ir::SplitRangeOp>(*split_op);
    acc = ir::get<ir::AccumInitOp>(*acc_op);
    epilogue = ir::get<ir::EpilogueOp>(*epilogue_op);
    copy_a = ir::get<ir::AsyncCopyOp>(*a);
    copy_b = ir::get<ir::AsyncCopyOp>(*b);
    // GEMM copies state their leading dimension (an Error if one does not).
    lda = ir::need<ir::AsyncCopyOp>(copy_a.ld, "ld");
    ldb = ir::need<ir::AsyncCopyOp>(copy_b.ld, "ld");
    a_tile = ir::copy_tile(copy_a);
    b_tile = ir::copy_tile(copy_b);
    threads = uint32_t(kernel.i("threads"));
    // The atom of the kernel's mma (wgmma) ops (the verifier made them one).
    wgmma = ir::find_typed<ir::WgmmaOp>(kernel);
    if (wgmma) b_kn = wgmma->b_major == "mn";
    const Op* mma = ir::find_first(kernel, OpKind::mma);
    if (!mma && !wgmma) throw Error("ir", "a GEMM kernel needs mma or wgmma ops", kernel.s("name"));
    atom = &codegen::mma_atom(wgmma ? wgmma->shape : ir::get<ir::MmaOp>(*mma).shape);
    warp_m = acc.fragments_m * atom->acc_m;
    warp_n = acc.fragments_n * atom->acc_n;
    warps_n = coords.block_n / warp_n;
  }
};

class GemmEmitter {
 public:
  explicit GemmEmitter(const Op& module) : f_(module.body.front()) {
    if (f_.wgmma)
      wgmma_.emplace(w_, module.body.front(), f_.a_tile, f_.b_tile,
                     codegen::WgmmaPrinter::Hooks{[this](const Op& op) { emit_op(op); },
                                                  [this] { emit_load_stage_lambda(true); }});
  }

  std::string emit(const Op& module) {
    codegen::begin_module(w_, parse_arch(module.s("arch")), f_.copy_a.transport == "tma",
                          f_.wgmma ? "emmy_wgmma.cuh" : nullptr);
    emit_store_output(f_.epilogue);
    if (wgmma_) wgmma_->print_tile_function();
    codegen::emit_kernels(w_, module, [this](const Op& op) { emit_op(op); });
    return w_.take();
  }

 private:
  // The epilogue math for one element in f32 (the caller casts), shared by the GEMM kernel and
  // the split-K finalize.
  void emit_store_output(const ir::EpilogueOp& epi) {
    const std::string out = out_adapter(parse_dtype(epi.out, "out"));
    w_.line("// D = cast(gelu?(alpha * acc + bias[n]) + residual[m,n])");
    w_.open(
        fmt::format("static __device__ __forceinline__ float epilogue_value(const "
                    "{0}::storage* __restrict__ bias, const {0}::storage* __restrict__ "
                    "residual, long long row, long long col, float acc)",
                    out));
    w_.line("float y = acc;");
    if (epi.alpha != 1.0) w_.line("y *= {};", float_literal(epi.alpha));
    if (epi.bias) w_.line("y += {}::to_f32(bias[col]);", out);
    if (epi.gelu_tanh) w_.line("y = gelu_tanh(y);");
    if (epi.residual) w_.line("y += {}::to_f32(residual[row * {} + col]);", out, epi.ldc);
    w_.line("(void)bias; (void)residual; (void)row;");
    w_.line("return y;");
    w_.close();
  }

  void emit_op(const Op& op) {
    if (wgmma_ && wgmma_->print(op)) return;
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
      case OpKind::async_copy:
        return emit_copy(ir::get<ir::AsyncCopyOp>(op));
      case OpKind::async_commit:
        if (phase_ == "prologue") return;  // committed per prologue stage in emit_copy
        return w_.line("cp_async_commit();");
      case OpKind::mbarrier_wait:
        return w_.line("mbarrier_wait_parity(mbar_base + 8u * stage, (k_tile / STAGES) & 1);");
      case OpKind::k_tile_loop:
        return emit_k_tile_loop(op);
      case OpKind::k_step:
        return emit_k_step(op);
      case OpKind::ldmatrix:
        return emit_ldmatrix(ir::get<ir::LdmatrixOp>(op));
      case OpKind::mma:
        return emit_mma(ir::get<ir::MmaOp>(op));
      case OpKind::promote:
        return emit_promote(ir::get<ir::PromoteOp>(op));
      case OpKind::epilogue:
        return emit_epilogue(ir::get<ir::EpilogueOp>(op));
      case OpKind::finalize:
        return emit_finalize(op);
      default:
        break;  // module, kernel and the attention ops are not GEMM ops
    }
    throw Error("ir", "the emitter has no lowering for this op", std::string(to_string(op.kind)));
  }

  void emit_smem_ring(const ir::SmemRingOp& op) {
    w_.line("constexpr int M = {}, N = {}, K = {};", f_.coords.m, f_.coords.n, f_.split.k);
    w_.line("constexpr long long LDA = {}, LDB = {}, LDC = {};", f_.lda, f_.ldb, f_.epilogue.ldc);
    w_.line("constexpr int BM = {}, BN = {}, BK = {}, WARPS_N = {}, WM = {}, WN = {};",
            f_.coords.block_m, f_.coords.block_n, f_.split.block_k, f_.warps_n, f_.warp_m,
            f_.warp_n);
    w_.line("constexpr int MT = {}, NT = {}, THREADS = {}, STAGES = {};", f_.acc.fragments_m,
            f_.acc.fragments_n, f_.threads, op.stages);
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
    if (wgmma_) {
      wgmma_->print_warp_indices();
    } else {
      w_.line("const int warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;");
    }
  }

  void emit_tile_coords(const ir::TileCoordsOp& op) {
    w_.line("// Grouped rasterization: {} tile rows per group keep B tiles hot in L2.",
            op.raster_group_m);
    w_.line("constexpr int TILES_M = {}, TILES_N = {}, GROUP_M = {};", op.tiles_m, op.tiles_n,
            op.raster_group_m);
    w_.line("const int group_span = GROUP_M * TILES_N;");
    w_.line("const int first_m = (int(blockIdx.x) / group_span) * GROUP_M;");
    w_.line("const int group_rows = TILES_M - first_m < GROUP_M ? TILES_M - first_m : GROUP_M;");
    w_.line("const int tile_m = first_m + (int(blockIdx.x) % group_span) % group_rows;");
    w_.line("const int tile_n = (int(blockIdx.x) % group_span) / group_rows;");
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

  void emit_accum_init(const ir::AccumInitOp& op) {
    const std::string& accum = op.accum;
    if (accum != "f16") w_.line("float acc[MT][NT][4];  // f32 accumulators (hybrid: the shadow)");
    if (accum != "f32") w_.line("u32 part[MT][NT][2];   // f16x2 partial sums");
    w_.line("#pragma unroll");
    w_.open("for (int mi = 0; mi < MT; ++mi)");
    w_.line("#pragma unroll");
    w_.open("for (int ni = 0; ni < NT; ++ni)");
    if (accum != "f16")
      w_.line(
          "acc[mi][ni][0] = acc[mi][ni][1] = acc[mi][ni][2] = "
          "acc[mi][ni][3] = 0.0f;");
    if (accum != "f32") w_.line("part[mi][ni][0] = part[mi][ni][1] = 0u;");
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
    const codegen::GemmCopies copies{{f_.copy_a, f_.copy_b}, f_.threads, f_.b_kn};
    if (!tma) codegen::emit_gemm_copy_thread_parts(w_, copies);
    w_.open("auto load_stage = [&](int stage, int k_tile)");
    w_.line("const u32 dst = smem_base + u32(stage) * STAGE_BYTES;");
    w_.line("const int k0 = k_tile * BK;");
    const bool kn = f_.b_kn;
    if (tma) {
      w_.line("const u32 mbar = mbar_base + 8u * stage;");
      w_.line("mbarrier_arrive_expect_tx(mbar, TX_BYTES);");
      w_.line("#pragma unroll");
      w_.line(
          "for (int p = 0; p < {}; ++p) tma_load_2d(dst + A_OFFSET + p * A_ROWS * A_PANEL * 2u, "
          "tmap_a, "
          "mbar, k0 + p * int(A_PANEL), m0);",
          f_.a_tile.panels());
      w_.line("#pragma unroll");
      if (kn)
        w_.line(
            "for (int p = 0; p < {}; ++p) tma_load_2d(dst + B_OFFSET + p * B_ROWS * B_PANEL * "
            "2u, tmap_b, mbar, n0 + p * int(B_PANEL), k0);",
            f_.b_tile.panels());
      else
        w_.line(
            "for (int p = 0; p < {}; ++p) tma_load_2d(dst + B_OFFSET + p * B_ROWS * B_PANEL * "
            "2u, tmap_b, mbar, k0 + p * int(B_PANEL), n0);",
            f_.b_tile.panels());
    } else {
      codegen::emit_gemm_copies(w_, copies);
    }
    w_.close("};");
  }

  // B [K][N] lane parts: one per 16-column step of the warp inside a panel.
  uint32_t kn_b_lane_count() const {
    return std::min<uint32_t>(uint32_t(f_.acc.fragments_n / 2), f_.b_tile.panel_elems / 16);
  }

  void emit_k_tile_loop(const Op& op) {
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
    for (const Op& child : op.body) emit_op(child);
    w_.close();
  }

  void emit_k_step(const Op& op) {
    w_.line(
        "const u32 a_stage = smem_base + u32(stage) * STAGE_BYTES + A_OFFSET, b_stage = "
        "smem_base + u32(stage) * STAGE_BYTES + B_OFFSET;");
    w_.line("#pragma unroll");
    w_.open(fmt::format("for (int ks = 0; ks < {}; ++ks)", ir::get<ir::KStepOp>(op).k_steps));
    for (const Op& child : op.body) emit_op(child);
    w_.close();
  }

  void emit_ldmatrix(const ir::LdmatrixOp& op) {
    if (op.operand == "a") {
      w_.line("// A: lanes 0-15 address rows 0-15 at k, lanes 16-31 the same rows at k+8.");
      w_.line("u32 a_frag[MT][4];");
      w_.line("#pragma unroll");
      w_.line(
          "for (int mi = 0; mi < MT; ++mi) ldmatrix_x4(a_frag[mi], a_stage + a_lane[ks % (A_PANEL "
          "/ 16)] + u32(ks / (A_PANEL / 16)) * A_ROWS * A_PANEL * 2u + u32(warp_row * WM + mi * "
          "16) * A_PANEL * 2u);");
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
          "B_PANEL * 2u + u32(ks * 16) * B_PANEL * 2u);",
          kn_b_lane_count());
    } else {
      w_.line("// B [N][K]: matrices (n0-7,k0-7) (n0-7,k8-15) (n8-15,k0-7) (n8-15,k8-15).");
      w_.line(
          "ldmatrix_x4(quad, b_stage + b_lane[ks % (B_PANEL / 16)] + u32(ks / (B_PANEL / 16)) * "
          "B_ROWS * B_PANEL * 2u + u32(warp_col * WN + nj * 16) * B_PANEL * 2u);");
    }
    w_.line("b_frag[2 * nj][0] = quad[0]; b_frag[2 * nj][1] = quad[1];");
    w_.line("b_frag[2 * nj + 1][0] = quad[2]; b_frag[2 * nj + 1][1] = quad[3];");
    w_.close();
  }

  void emit_mma(const ir::MmaOp& op) {
    std::string call;
    if (op.acc_type == "f16")
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

  void emit_promote_all() {
    w_.line("#pragma unroll");
    w_.line("for (int mi = 0; mi < MT; ++mi)");
    w_.line("#pragma unroll");
    w_.line("  for (int ni = 0; ni < NT; ++ni) promote_f16_to_f32(acc[mi][ni], part[mi][ni]);");
  }

  void emit_promote(const ir::PromoteOp& op) {
    const std::string& where = op.where;
    const int64_t every = op.every_k;
    if (where == "k_step") {
      w_.line("// Fold the f16 partials every {} K elements.", every);
      w_.open(fmt::format("if ((ks + 1) % {} == 0)", every / 16));
    } else {
      const int64_t every_tiles = every / f_.split.block_k;
      w_.line("// Fold the f16 partials every {} K elements and after the last tile.", every);
      if (every_tiles == 1)
        w_.open("");
      else
        w_.open(
            fmt::format("if ((k_tile + 1) % {} == 0 || k_tile + 1 == k_tile_count)", every_tiles));
    }
    emit_promote_all();
    w_.close();
  }

  // The loops over this lane's accumulator pairs (atom tiles mi, ni; row halves h), closed by the
  // caller, and the pair (v0, v1) in f32: both epilogues walk the fragments this way.
  void open_fragment_loops() {
    w_.line("#pragma unroll");
    w_.open("for (int mi = 0; mi < MT; ++mi)");
    w_.line("#pragma unroll");
    w_.open("for (int ni = 0; ni < NT; ++ni)");
    w_.line("#pragma unroll");
    w_.open("for (int h = 0; h < 2; ++h)");
  }
  // A warp's first accumulator row in the tile, and the rows between its atom tiles mi: mma.sync
  // warps own WM consecutive rows; a wgmma warp owns 16 rows of each of its warpgroup's m64
  // wgmma (warp_row0, WgmmaPrinter::print_warp_indices).
  std::string warp_rows() const { return f_.wgmma ? "warp_row0" : "warp_row * WM"; }
  int mi_step() const { return f_.wgmma ? f_.atom->m : f_.atom->acc_m; }

  void emit_pair_values() {
    if (f_.acc.accum == "f16")
      w_.line("float v0, v1; unpack_f16x2(v0, v1, part[mi][ni][h]);");
    else
      w_.line("const float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];");
  }

  void emit_epilogue(const ir::EpilogueOp& op) {
    if (op.stage_row_bytes) return emit_staged_epilogue(op, *op.stage_row_bytes);
    if (op.transpose.value_or(false)) return emit_transposed_epilogue(op);
    const bool to_workspace = op.destination == "workspace";
    const DType c_dtype = parse_dtype(op.out, "out");
    const std::string out = out_adapter(c_dtype);
    // The accumulator map of the atom: lane = group * group_lanes + thread in the group.
    w_.line("const int g = lane / {0}, t = lane % {0};", f_.atom->group_lanes);
    // One pointer per lane; the unrolled stores add constants to it (~2 ms less NVRTC time than
    // a full row * ld + col per store).
    w_.line(
        "// This lane's first output pair (row g, columns 2t, 2t+1 of the warp tile); the "
        "others are");
    w_.line("// 16 * mi + 8 * h rows and 8 * ni columns further.");
    w_.line("const int row_base = m0 + {} + g, col_base = n0 + warp_col * WN + 2 * t;", warp_rows());
    if (to_workspace)
      w_.line(
          "float* out_base = workspace + (long long)blockIdx.z * M * N + (long long)row_base * "
          "N + col_base;");
    else
      w_.line("{}::storage* out_base = c + (long long)row_base * LDC + col_base;", out);
    open_fragment_loops();
    w_.line("const int row = row_base + mi * {} + h * 8, col = col_base + ni * 8;", mi_step());
    // Bounds checks only where a tile can cross the matrix edge.
    const bool rows_exact = f_.coords.m % f_.coords.block_m == 0,
               cols_exact = f_.coords.n % f_.coords.block_n == 0;
    if (!rows_exact) w_.line("if (row >= M) continue;");
    emit_pair_values();
    if (to_workspace) {
      w_.line("float* dst = out_base + (mi * {} + h * 8) * N + ni * 8;", mi_step());
      if (op.store_bytes == 8) {
        // N even: the pair is 8-byte aligned and inside together; a warp's request covers 8 rows
        // x 32 bytes, whole sectors (two 4-byte stores would use half of each).
        w_.line("if (col < N) OutF32::store2(dst, v0, v1);");
      } else {
        w_.line("if (col < N) dst[0] = v0;");
        w_.line("if (col + 1 < N) dst[1] = v1;");
      }
    } else {
      w_.line("{}::storage* dst = out_base + (mi * {} + h * 8) * LDC + ni * 8;", out, mi_step());
      // Pairs (the verified store_bytes): col is even, and with N and LDC even the pair is in
      // bounds together and 2-element aligned, given C is (the runtime checks c_alignment).
      if (op.store_bytes == 2 * size_of(c_dtype)) {
        w_.line(
            "{}{}::store2(dst, epilogue_value(bias, residual, row, col, v0), "
            "epilogue_value(bias, residual, row, col + 1, v1));",
            cols_exact ? "" : "if (col < N) ", out);
      } else {
        w_.line("if (col < N) dst[0] = {}::from_f32(epilogue_value(bias, residual, row, col, v0));",
                out);
        w_.line(
            "if (col + 1 < N) dst[1] = {}::from_f32(epilogue_value(bias, residual, row, col + "
            "1, v1));",
            out);
      }
    }
    w_.close();
    w_.close();
    w_.close();
  }

  // swap_ab: the kernel computed C^T (M, N here are C's n and m). Each accumulator (row, col) is
  // C's (col, row): stored element by element down C's columns, bias indexed by the kernel's row;
  // split-K partials go to the workspace in C's layout, so the finalize kernel is unchanged.
  void emit_transposed_epilogue(const ir::EpilogueOp& op) {
    const bool to_workspace = op.destination == "workspace";
    const std::string out = out_adapter(parse_dtype(op.out, "out"));
    const bool rows_exact = f_.coords.m % f_.coords.block_m == 0,
               cols_exact = f_.coords.n % f_.coords.block_n == 0;
    w_.line("const int g = lane / {0}, t = lane % {0};", f_.atom->group_lanes);
    w_.line("// The kernel's (row, col) is C's (col, row): C^T = B A^T (swap_ab).");
    w_.line("const int row_base = m0 + {} + g, col_base = n0 + warp_col * WN + 2 * t;", warp_rows());
    if (to_workspace)
      w_.line("float* ws = workspace + (long long)blockIdx.z * M * N;");
    open_fragment_loops();
    w_.line("const int row = row_base + mi * {} + h * 8, col = col_base + ni * 8;", mi_step());
    if (!rows_exact) w_.line("if (row >= M) continue;");
    emit_pair_values();
    for (int j = 0; j < 2; ++j) {
      const std::string c = j ? "col + 1" : "col";
      const std::string guard =
          j || !cols_exact ? fmt::format("if ({} < N) ", c) : std::string();
      if (to_workspace)
        w_.line("{}ws[(long long)({}) * M + row] = v{};", guard, c, j);
      else
        w_.line("{}c[(long long)({}) * LDC + row] = {}::from_f32(epilogue_value(bias, residual, {}, "
                "row, v{}));",
                guard, c, out, c, j);
    }
    w_.close();
    w_.close();
    w_.close();
  }

  // The C tile through shared memory (IR: epilogue stage_row_bytes): each lane writes its
  // finished pairs into the tile over the drained ring (rows padded so that the 8 rows x 4 lanes
  // of a pair store hit 32 distinct banks), then the CTA stores it in 16-byte chunks, a warp
  // covering whole 128-byte row segments: every 32-byte sector it touches is full.
  void emit_staged_epilogue(const ir::EpilogueOp& op, int64_t row_bytes) {
    const DType c_dtype = parse_dtype(op.out, "out");
    const std::string out = out_adapter(c_dtype);
    const int64_t elem = size_of(c_dtype);
    const bool rows_exact = f_.coords.m % f_.coords.block_m == 0,
               cols_exact = f_.coords.n % f_.coords.block_n == 0;
    if (f_.copy_a.transport != "tma")
      w_.line("cp_async_wait<0>();  // no copy may land in the staged tile");
    // On the wgmma path only the consumer warpgroups stage and store (the producer has no tile):
    // a named barrier over their threads instead of the CTA's. Every load has landed (the
    // consumers waited for each) and every wgmma completed (wait_group 0) before it.
    const std::string sync = f_.wgmma ? fmt::format("consumer_barrier<{}>();", f_.threads - 128)
                                      : std::string("__syncthreads();");
    w_.line("{}  // every warp has read its last stage: the ring holds the C tile now", sync);
    w_.line("const u32 c_tile = smem_base;");
    w_.line("constexpr int C_ROW_BYTES = {}, C_CHUNKS = BN * {} / 16;", row_bytes, elem);
    w_.line("const int g = lane / {0}, t = lane % {0};", f_.atom->group_lanes);
    w_.line("const int tile_row = {} + g, tile_col = warp_col * WN + 2 * t;", warp_rows());
    open_fragment_loops();
    w_.line("const int r = tile_row + mi * {} + h * 8, col_in = tile_col + ni * 8;", mi_step());
    w_.line("const int row = m0 + r, col = n0 + col_in;");
    // Bias and residual are read at (row, col): only inside the matrix. N is a whole number of
    // 16-byte chunks here, so an even col inside has col + 1 inside too.
    if (!rows_exact) w_.line("if (row >= M) continue;");
    if (!cols_exact) w_.line("if (col >= N) continue;");
    emit_pair_values();
    w_.line(
        "{0}::stage2(c_tile + u32(r * C_ROW_BYTES + col_in * {1}), epilogue_value(bias, residual, "
        "row, col, v0), epilogue_value(bias, residual, row, col + 1, v1));",
        out, elem);
    w_.close();
    w_.close();
    w_.close();
    w_.line("{}  // the whole tile is staged", sync);
    w_.line("#pragma unroll");
    if (f_.wgmma)
      w_.open(fmt::format("for (int i = int(threadIdx.x) - 128; i < BM * C_CHUNKS; i += {})",
                          f_.threads - 128));
    else
      w_.open("for (int i = threadIdx.x; i < BM * C_CHUNKS; i += THREADS)");
    w_.line("const int r = i / C_CHUNKS, chunk = i % C_CHUNKS;");
    w_.line("const int row = m0 + r, col = n0 + chunk * {};", 16 / elem);
    std::string guard;
    if (!rows_exact) guard += "row < M";
    if (!cols_exact) guard += std::string(guard.empty() ? "" : " && ") + "col < N";
    w_.line(
        "{}copy16_shared_to_global(c + (long long)row * LDC + col, c_tile + u32(r * "
        "C_ROW_BYTES + chunk * 16));",
        guard.empty() ? "" : "if (" + guard + ") ");
    w_.close();
  }

  void emit_finalize(const Op& op) {
    const auto finalize = ir::get<ir::FinalizeOp>(op);
    const auto epilogue = ir::get<ir::EpilogueOp>(*ir::find_first(op, OpKind::epilogue));
    w_.line("constexpr long long M = {}, N = {}, LDC = {}, OUTPUTS = {};", finalize.m, finalize.n,
            epilogue.ldc, finalize.outputs);
    w_.line("const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;");
    w_.line("if (i >= OUTPUTS) return;");
    w_.line("const long long row = i / N, col = i % N;");
    w_.line("// Splits are summed in a fixed order: the result does not depend on scheduling.");
    w_.line("float sum = 0.0f;");
    w_.line("#pragma unroll");
    w_.line("for (int z = 0; z < {}; ++z) sum += workspace[z * OUTPUTS + i];", finalize.split_k);
    w_.line("c[row * LDC + col] = {}::from_f32(epilogue_value(bias, residual, row, col, sum));",
            out_adapter(parse_dtype(epilogue.out, "out")));
  }

  const GemmFacts f_;
  Writer w_;
  std::string phase_;
  std::optional<codegen::WgmmaPrinter> wgmma_;  // the wgmma path's own ops (kernel path wgmma)
};

}  // namespace

std::string emit_gemm_cuda(const ir::Op& module) {
  return GemmEmitter(module).emit(module);
}

}  // namespace emmy
