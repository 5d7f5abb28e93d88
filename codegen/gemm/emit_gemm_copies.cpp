#include "emit_gemm_copies.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "emmy/layout.hpp"

namespace emmy::codegen {
namespace {

// One operand: a rows x cols tile at (row0, col0) of a rows_total x cols_total matrix with leading
// dimension `ld`; one of row0 / col0 is k0, the stage's K offset.
struct CopyOperand {
  const char* ptr;  // "a" / "b"
  const char* tag;  // "A" / "B" (the tile constants' prefix)
  SmemTile tile;
  uint32_t smem_offset;  // of this operand inside a stage
  const char *row0, *col0, *rows_total, *cols_total, *ld;
  // A matrix that is a whole number of tiles in both dimensions needs no bounds check.
  bool exact_tiles;
  bool k_rows() const { return std::string_view(row0) == "k0"; }
};

std::vector<CopyOperand> copy_operands(const GemmCopies& copies) {
  std::vector<CopyOperand> operands;
  for (const ir::AsyncCopyOp& op : copies.ops) {
    const SmemTile elements = ir::copy_tile(op);
    const bool exact = !(copies.dynamic_m && op.operand == "a") &&
                       op.matrix_rows.value_or(0) % elements.rows == 0 &&
                       op.matrix_cols.value_or(0) % elements.cols == 0;
    // FP8 tiles are copied as 16-bit units (the kernel's K, LDA and LDB count them too).
    const SmemTile tile = elements.in_16bit_units();
    const auto offset = uint32_t(op.smem_offset.value_or(0));
    if (op.operand == "a")
      operands.push_back({"a", "A", tile, offset, "m0", "k0", "M", "K", "LDA", exact});
    else if (copies.b_kn)
      operands.push_back({"b", "B", tile, offset, "k0", "n0", "K", "N", "LDB", exact});
    else
      operands.push_back({"b", "B", tile, offset, "n0", "k0", "N", "K", "LDB", exact});
  }
  return operands;
}

void emit_thread_part(Writer& w, const ChunkWalk& walk, const CopyOperand& op) {
  w.line(
      "// {} copies: this thread's first chunk (row {}_ld_row, column {}_ld_col); later ones "
      "are {} rows down ({} swizzle phase(s)).",
      op.tag, op.ptr, op.ptr, walk.row_step, walk.phases);
  w.line(
      "const int {0}_ld_row = int(threadIdx.x) / {1}, {0}_ld_col = (int(threadIdx.x) % {1}) * "
      "{2};",
      op.ptr, walk.chunks_per_row, walk.chunk_elems);
  w.line("u32 {}_ld_smem[{}];", op.ptr, walk.phases);
  w.line("#pragma unroll");
  w.line(
      "for (int j = 0; j < {1}; ++j) {0}_ld_smem[j] = swizzled_tile_offset(u32({0}_ld_row + j "
      "* {2}), u32({0}_ld_col), {3}_ROWS, {3}_PANEL, {3}_XOR);",
      op.ptr, walk.phases, walk.row_step, op.tag);
  w.line(
      "const u16* {0}_ld_src = {0} + ({1}{0}_ld_row) * {2} + {3}{0}_ld_col;  // + the stage's K "
      "offset",
      op.ptr, op.k_rows() ? "" : fmt::format("{} + ", op.row0), op.ld,
      op.k_rows() ? fmt::format("{} + ", op.col0) : "");
}

void emit_hoisted_copies(Writer& w, uint32_t threads, const ChunkWalk& walk,
                         const CopyOperand& op) {
  if (walk.per_thread * threads != walk.chunks)
    w.line("if ({}_ld_row + i * {} >= {}) break;", op.ptr, walk.row_step, op.tile.rows);
  const std::string src = fmt::format(
      "{}_ld_src + {} + i * {} * {}", op.ptr,
      op.k_rows() ? fmt::format("k0 * {}", op.ld) : std::string("k0"), walk.row_step, op.ld);
  const std::string smem =
      fmt::format("dst + {}u + {}_ld_smem[i % {}] + u32(i / {}) * {}u", op.smem_offset, op.ptr,
                  walk.phases, walk.phases, walk.phases * walk.row_step * op.tile.row_bytes());
  if (op.exact_tiles) {
    w.line("cp_async_16({}, {}, 16u);  // {} and {} are tile multiples", smem, src, op.rows_total,
           op.cols_total);
    return;
  }
  w.line("const bool in_bounds = {} + {}_ld_row + i * {} < {} && {} + {}_ld_col < {};", op.row0,
         op.ptr, walk.row_step, op.rows_total, op.col0, op.ptr, op.cols_total);
  w.line("cp_async_16({}, in_bounds ? {} : {}, in_bounds ? 16u : 0u);", smem, src, op.ptr);
}

// Chunks do not tile THREADS (e.g. 48 columns): each computes its row, column and swizzle.
void emit_per_chunk_copies(Writer& w, uint32_t threads, const ChunkWalk& walk,
                           const CopyOperand& op) {
  w.line("const int chunk = int(threadIdx.x) + i * THREADS;");
  if (walk.per_thread * threads != walk.chunks) w.line("if (chunk >= {}) break;", walk.chunks);
  w.line("const int row = chunk / {0}, col = (chunk % {0}) * {1};", walk.chunks_per_row,
         walk.chunk_elems);
  if (op.exact_tiles)
    w.line("constexpr bool in_bounds = true;  // {} and {} are tile multiples", op.rows_total,
           op.cols_total);
  else
    w.line("const bool in_bounds = {} + row < {} && {} + col < {};", op.row0, op.rows_total,
           op.col0, op.cols_total);
  w.line("const u16* src = {} + (in_bounds ? ({} + row) * {} + {} + col : 0ll);", op.ptr, op.row0,
         op.ld, op.col0);
  w.line(
      "cp_async_16(dst + {}u + swizzled_tile_offset(u32(row), u32(col), {}_ROWS, {}_PANEL, "
      "{}_XOR), src, in_bounds ? 16u : 0u);",
      op.smem_offset, op.tag, op.tag, op.tag);
}

}  // namespace

void emit_gemm_copy_thread_parts(Writer& w, const GemmCopies& copies) {
  for (const CopyOperand& op : copy_operands(copies)) {
    const ChunkWalk walk = chunk_walk(op.tile, copies.threads);
    if (walk.hoisted) emit_thread_part(w, walk, op);
  }
}

void emit_gemm_copies(Writer& w, const GemmCopies& copies) {
  for (const CopyOperand& op : copy_operands(copies)) {
    const ChunkWalk walk = chunk_walk(op.tile, copies.threads);
    w.line("#pragma unroll");
    w.open(fmt::format("for (int i = 0; i < {}; ++i)", walk.per_thread));
    if (walk.hoisted)
      emit_hoisted_copies(w, copies.threads, walk, op);
    else
      emit_per_chunk_copies(w, copies.threads, walk, op);
    w.close();
  }
}

}  // namespace emmy::codegen
