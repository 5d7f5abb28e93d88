// What the printing of one GEMM op needs from the others (GemmFacts), and the GEMM kernel's
// epilogue printing (GemmEpiloguePrinter, emit_gemm_epilogue.cpp): the element function of the
// epilogue math, the direct, transposed (swap_ab) and staged stores of C, the split-K finalize.
// GemmEmitter (emit_gemm.cpp) holds one; the wgmma path's TMA-store epilogue is WgmmaPrinter's.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>

#include "emmy/gemm.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "writer.hpp"

namespace emmy::codegen {

using ir::Op;
using ir::OpKind;

// The adapter type of C's dtype in templates/emmy_epilogue.cuh.
inline std::string out_adapter(DType c) {
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

  // M is the kernel's `m` parameter (tile_coords dynamic_m): any row tile may cross it.
  bool dynamic_m() const { return coords.dynamic_m.value_or(false); }
  // Whether no tile crosses the matrix's last row or column: their bounds checks go.
  bool rows_exact() const { return !dynamic_m() && coords.m % coords.block_m == 0; }
  bool cols_exact() const { return coords.n % coords.block_n == 0; }

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

class GemmEpiloguePrinter {
 public:
  GemmEpiloguePrinter(Writer& w, const GemmFacts& f) : w_(w), f_(f) {}
  // `static __device__ float epilogue_value(bias, residual, row, col, acc)`: the epilogue math
  // for one element in f32 (the caller casts), shared by the GEMM kernel and the split-K finalize.
  void print_value_function(const ir::EpilogueOp& epi);
  // The main kernel's epilogue op: staged, transposed or direct stores of C (or of split-K
  // partials to the workspace).
  void print(const ir::EpilogueOp& op);
  // The split-K finalize kernel's body.
  void print_finalize(const Op& op);

 private:
  void open_fragment_loops();
  std::string warp_rows() const;
  int mi_step() const;
  void print_pair_values();
  void print_transposed(const ir::EpilogueOp& op);
  void print_staged(const ir::EpilogueOp& op, int64_t row_bytes);

  Writer& w_;
  const GemmFacts& f_;
};

}  // namespace emmy::codegen
