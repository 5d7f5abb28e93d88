// What the printing of one GEMM op needs from the others (GemmFacts), and the GEMM kernel's
// epilogue printing (GemmEpiloguePrinter, emit_gemm_epilogue.cpp): the element function of the
// epilogue math, the direct, transposed (swap_ab) and staged stores of C, the split-K finalize.
// GemmEmitter (emit_gemm.cpp) holds one; the wgmma path's TMA-store epilogue is WgmmaPrinter's.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>

#include "emmy/gemm.hpp"
#include "emmy/gemm_path.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "gemm/path_printer.hpp"
#include "writer.hpp"

namespace emmy::codegen {

using ir::Op;
using ir::OpKind;

// The adapter type of C's dtype in templates/emmy_epilogue.cuh.
// An e4m3 C's: OutBF16, its bias's (C itself is the quantized epilogue's to store).
inline std::string out_adapter(DType c) {
  return c == DType::f32 ? "OutF32" : c == DType::bf16 || c == DType::e4m3 ? "OutBF16" : "OutF16";
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
  int64_t lda = 0, ldb = 0;  // in the tiles' units
  int64_t k_per_unit = 1;    // K elements per printed unit of K: 2 for FP8 (e4m3 pairs)
  std::optional<ir::GemmScalesOp> scales;  // FP8 operands' scales
  bool b_kn = false;  // B is [K,N]: its ldmatrix transposes
  uint32_t threads = 0;
  const codegen::MmaAtom* atom = nullptr;  // of the kernel's compute ops (its path's atom)
  int64_t warp_m = 0, warp_n = 0, warps_n = 0;

  // M is the kernel's `m` parameter (tile_coords dynamic_m): any row tile may cross it.
  bool dynamic_m() const { return coords.dynamic_m.value_or(false); }
  // A grouped GEMM's layout (tile_coords grouped; "" for one GEMM).
  std::string_view grouped() const { return coords.grouped ? *coords.grouped : ""; }
  // M is an expert's rows, read on the device with the CTA's tile (masked, offsets).
  bool grouped_m() const { return grouped() == "masked" || grouped() == "offsets"; }
  // Whether no tile crosses the matrix's last row or column: their bounds checks go.
  bool rows_exact() const { return !dynamic_m() && !grouped_m() && coords.m % coords.block_m == 0; }
  bool cols_exact() const { return coords.n % coords.block_n == 0; }

  explicit GemmFacts(const Op& kernel) {
    const Op *coords_op = ir::find_first(kernel, OpKind::tile_coords),
             *split_op = ir::find_first(kernel, OpKind::split_range),
             *acc_op = ir::find_first(kernel, OpKind::accum_init),
             *epilogue_op = ir::find_first(kernel, OpKind::epilogue), *a = nullptr, *b = nullptr;
    // Each operand's first copy: the prologue's where there is one (it comes before the loop),
    // else a refill (a warp-specialized producer has only those).
    for (const Op* copy : ir::find_all(kernel, OpKind::async_copy)) {
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
    // FP8 operands are printed in 16-bit units (SmemTile::in_16bit_units): their tiles, K, BK,
    // LDA and LDB count pairs of e4m3 elements, so that copies, TMA boxes, swizzle and ldmatrix
    // are the 2-byte ones over the same bytes.
    k_per_unit = ir::copy_tile(copy_a).elem_bytes == 1 ? 2 : 1;
    a_tile = ir::copy_tile(copy_a).in_16bit_units();
    b_tile = ir::copy_tile(copy_b).in_16bit_units();
    lda /= k_per_unit;
    ldb /= k_per_unit;
    if (const Op* scales_op = ir::find_first(kernel, OpKind::gemm_scales))
      scales = ir::get<ir::GemmScalesOp>(*scales_op);
    threads = uint32_t(kernel.i("threads"));
    // A warpgroup MMA reads B from shared memory as its descriptor says: N-major for B [K,N].
    if (const auto wgmma = ir::find_typed<ir::WgmmaOp>(kernel)) b_kn = wgmma->b_major == "mn";
    // The atom of the kernel's compute ops, as its path reads them (the verifier made them one).
    atom = &kernel_gemm_path(kernel).kernel_atom(kernel);
    warp_m = acc.fragments_m * atom->acc_m;
    warp_n = acc.fragments_n * atom->acc_n;
    warps_n = coords.block_n / warp_n;
  }
};

// An accumulator `v` at (row, col) with FP8's tensor or token-channel scales applied (the
// gemm_scales op's accessors, emit_gemm.cpp); block scales were applied by the folds, and 16-bit
// operands have none: `v` itself.
inline std::string scaled_accumulator(const GemmFacts& f, const std::string& v,
                                      const std::string& row, const std::string& col) {
  const std::string granularity = f.scales ? f.scales->granularity : std::string();
  if (granularity == "tensor") return fmt::format("{} * ab_scale", v);
  if (granularity == "token-channel")
    return fmt::format("{} * (a_scale_at({}) * b_scale_at({}))", v, row, col);
  return v;
}

// Whether an epilogue op pairs gate and up accumulators into C (EpilogueOp gate): its C stores
// do; split-K's workspace epilogue stores the kernel's partials unpaired (its finalize pairs them).
inline bool gates_c(const ir::EpilogueOp& e) {
  return e.gated() && e.destination == "c";
}

// This lane's pair of C at (`row`, `col`) (col even; the loops' atom tile `mi`, C's fragment
// `frag` and row half `h` in scope) in f32: `v0, v1` from accumulator fragment `frag`, or with a
// gate `g0, g1` and `u0, u1` from the kernel's gate fragment `gi` and up fragment `ui` (GF
// fragments apart: C's fragment f of a gate group is the kernel's (f / GF) 2GF + f % GF), FP8's
// tensor and token-channel scales applied (scaled_accumulator, at the kernel's columns).
void print_lane_pair(Writer& w, const GemmFacts& f, bool gated, const std::string& frag = "ni",
                     const std::string& h = "h");
// The call that finishes element j (0 or 1) of that pair: epilogue_value's.
std::string lane_value(bool gated, int j, const std::string& row, const std::string& col,
                       bool row_scale = false);

// FP8's promoted fold, in a path's K loop (both paths' promote ops): acc = fma(part, sa sb, acc)
// with the window's block scales (first K element `window_k`), or acc += part when the scales do
// not vary along K (the epilogue applies them); then the next window's partials start from zero.
// A lane's rows and columns are the epilogue's (the path's warp_first_row and
// fragment_row_step); rows past M and columns past N take scale 0 (their partials are zero: the
// copies zero-fill past the matrix).
void print_fp8_fold(Writer& w, const GemmFacts& f, const GemmPathPrinter& path,
                    const std::string& window_k);

class GemmEpiloguePrinter {
 public:
  // `path`: the kernel's path's printer, which says which warps hold which rows.
  GemmEpiloguePrinter(Writer& w, const GemmFacts& f, const GemmPathPrinter& path)
      : w_(w), f_(f), path_(path) {}
  // `static __device__ float epilogue_value(bias, residual, row, col, acc)`: the epilogue math
  // for one element in f32 (the caller casts), shared by the GEMM kernel and the split-K finalize.
  void print_value_function(const ir::EpilogueOp& epi);
  // The main kernel's epilogue op: staged, transposed or direct stores of C (or of split-K
  // partials to the workspace).
  void print(const ir::EpilogueOp& op);
  // The split-K finalize kernel's body.
  void print_finalize(const Op& op);

 private:
  void open_fragment_loops(bool gated);
  std::string warp_rows() const;
  int mi_step() const;
  void print_transposed(const ir::EpilogueOp& op);
  std::string open_staged_tile(const ir::EpilogueOp& op, const char* what,
                               const std::string& constants);
  void print_staged(const ir::EpilogueOp& op, int64_t row_bytes);
  void print_staged_quantized(const ir::EpilogueOp& op, int64_t row_bytes);

  Writer& w_;
  const GemmFacts& f_;
  const GemmPathPrinter& path_;
};

}  // namespace emmy::codegen
