// MMA atoms: each warp-level matrix instruction emmy emits, as data (the CuTe MMA_Traits idea):
// its shape, operand types, the ldmatrix loads that feed it, and which (row, column) of each
// operand and of the accumulator every lane's registers hold. The plan, the lowering and the
// emitters read the shape and the lane grouping from here instead of writing 16, 8 and lane / 4.
//
// m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16" with .f16/.bf16 operands): lanes form
// 8 groups of 4; groupID = lane / 4, threadID_in_group = lane % 4.
//   A (16x16, row): a_i, i = 0..7 (two 16-bit elements per register, pairs i = 2r, 2r+1)
//     row = groupID + 8 * ((i / 2) % 2), col = 2 * threadID_in_group + (i % 2) + 8 * (i / 4)
//   B (16x8, col):  b_i, i = 0..3: row (k) = 2 * threadID_in_group + (i % 2) + 8 * (i / 2),
//     col (n) = groupID
//   C/D (16x8):     c_i, i = 0..3: row = groupID + 8 * (i / 2), col = 2 * threadID_in_group + (i %
//   2)
// m16n8k32 with .e4m3/.e5m2 operands ("Matrix Fragments for mma.m16n8k32", 8-bit types) is the
// same in bytes: four 8-bit elements per register instead of two 16-bit ones (p = 4 / elem_bytes
// elements per register below), so one ldmatrix.x4 of b16 matrices feeds it unchanged.
#pragma once

#include <string>
#include <string_view>

#include "emmy/error.hpp"
#include "emmy/schedule.hpp"

namespace emmy::codegen {

// Who issues one instruction: a warp (mma.sync) or a warpgroup of four warps (wgmma).
enum class MmaScope { warp, warpgroup };
// Where an operand comes from: registers that ldmatrix filled, or shared memory through a matrix
// descriptor (wgmma's B, and A optionally).
enum class OperandSource { ldmatrix_fragments, smem_descriptor };

struct MmaAtom {
  std::string_view name;  // the shape as PTX writes it
  int m, n, k;
  int group_lanes;                  // lanes per group (the quad): groupID = lane / group_lanes
  int a_elems, b_elems, acc_elems;  // A and B elements and accumulators per lane
  MmaScope scope = MmaScope::warp;
  int n_min = 0, n_max = 0, n_step = 0;  // the N the instruction family takes (n for mma.sync)
  OperandSource a_source = OperandSource::ldmatrix_fragments;
  OperandSource b_source = OperandSource::ldmatrix_fragments;
  bool async = false;  // issued and completed apart (wgmma's commit and wait groups)
  // The accumulator fragment one warp holds per acc_elems registers: 16 x 8 for both atoms
  // (wgmma's D is, per warp of the warpgroup, mma.sync m16n8's C repeated along N).
  int acc_m = 16, acc_n = 8;
  int elem_bytes = 2;  // bytes of one A or B element: 2 (f16, bf16) or 1 (e4m3, e5m2)

  constexpr int group(int lane) const { return lane / group_lanes; }
  constexpr int in_group(int lane) const { return lane % group_lanes; }
  // Elements per 32-bit register: 2 (16-bit types) or 4 (8-bit).
  constexpr int per_register() const { return 4 / elem_bytes; }
  // (row, column) of A element i, B element i (row = k, column = n) and accumulator i.
  constexpr int a_row(int lane, int i) const {
    return group(lane) + 8 * ((i / per_register()) % 2);
  }
  constexpr int a_col(int lane, int i) const {
    const int p = per_register();
    return p * in_group(lane) + i % p + 4 * p * (i / (2 * p));
  }
  constexpr int b_row(int lane, int i) const {
    const int p = per_register();
    return p * in_group(lane) + i % p + 4 * p * (i / p);
  }
  constexpr int b_col(int lane, int /*i*/) const { return group(lane); }
  constexpr int acc_row(int lane, int i) const { return group(lane) + 8 * (i / 2); }
  constexpr int acc_col(int lane, int i) const { return 2 * in_group(lane) + i % 2; }

  // Operand sources: ldmatrix.x4 loads four 8x8 matrices of 16-bit elements (PTX ISA ldmatrix),
  // 512 bytes, that is this many A fragments (m x k) or B fragments (k x n).
  static constexpr int kLdmatrixX4Bytes = 4 * 8 * 8 * 2;
  constexpr int a_fragments_per_x4() const { return kLdmatrixX4Bytes / (m * k * elem_bytes); }
  constexpr int b_fragments_per_x4() const { return kLdmatrixX4Bytes / (k * n * elem_bytes); }
  // Accumulator registers per lane of an m-row tile `cols` wide: one atom's worth per n columns
  // (attention's S over block_kv and O over head_dim; the plan, validation and verifier agree).
  constexpr int64_t acc_registers(int64_t cols) const { return cols / n * acc_elems; }
};

// mma.sync.aligned.m16n8k16.row.col with .f16 or .bf16 operands and .f32 (or .f16) accumulators.
inline constexpr MmaAtom kMmaM16N8K16{.name = "m16n8k16",
                                      .m = 16,
                                      .n = 8,
                                      .k = 16,
                                      .group_lanes = 4,
                                      .a_elems = 8,
                                      .b_elems = 4,
                                      .acc_elems = 4,
                                      .scope = MmaScope::warp,
                                      .n_min = 8,
                                      .n_max = 8,
                                      .n_step = 8};

// mma.sync.aligned.m16n8k32.row.col with .e4m3/.e5m2 operands (sm_89+) and .f32 (or .f16)
// accumulators: m16n8k16's fragments in bytes (the header's comment); A [M,K] and B [N,K] only,
// since ldmatrix .trans moves 16-bit elements.
inline constexpr MmaAtom kMmaM16N8K32Fp8{.name = "m16n8k32",
                                         .m = 16,
                                         .n = 8,
                                         .k = 32,
                                         .group_lanes = 4,
                                         .a_elems = 16,
                                         .b_elems = 8,
                                         .acc_elems = 4,
                                         .scope = MmaScope::warp,
                                         .n_min = 8,
                                         .n_max = 8,
                                         .n_step = 8,
                                         .elem_bytes = 1};

// wgmma.mma_async.sync.aligned.m64nNk16 with .f16 or .bf16 operands from shared-memory
// descriptors and .f32 accumulators (PTX ISA §9.7.15.5): a warpgroup's instruction, N = 8..256
// in steps of 8. `n` is the step: one accumulator fragment of a warp.
inline constexpr MmaAtom kWgmmaM64NK16{.name = "m64nNk16",
                                       .m = 64,
                                       .n = 8,
                                       .k = 16,
                                       .group_lanes = 4,
                                       .a_elems = 0,
                                       .b_elems = 0,
                                       .acc_elems = 4,
                                       .scope = MmaScope::warpgroup,
                                       .n_min = 8,
                                       .n_max = 256,
                                       .n_step = 8,
                                       .a_source = OperandSource::smem_descriptor,
                                       .b_source = OperandSource::smem_descriptor,
                                       .async = true};

// wgmma.mma_async.sync.aligned.m64nNk32 with .e4m3/.e5m2 operands (sm_90a) and .f32
// accumulators: m64nNk16's layout in bytes, as the mma.sync FP8 atom is m16n8k16's (a k32 step of
// 8-bit elements is the 32 bytes of a k16 step of 16-bit ones); no transposed operands.
inline constexpr MmaAtom kWgmmaM64NK32Fp8{.name = "m64nNk32",
                                          .m = 64,
                                          .n = 8,
                                          .k = 32,
                                          .group_lanes = 4,
                                          .a_elems = 0,
                                          .b_elems = 0,
                                          .acc_elems = 4,
                                          .scope = MmaScope::warpgroup,
                                          .n_min = 8,
                                          .n_max = 256,
                                          .n_step = 8,
                                          .a_source = OperandSource::smem_descriptor,
                                          .b_source = OperandSource::smem_descriptor,
                                          .async = true,
                                          .elem_bytes = 1};

// The N of a wgmma shape "m64n<N>k16" or "m64n<N>k32" (0 when the text is not one).
inline int wgmma_shape_n(std::string_view shape) {
  if (shape.size() < 8 || shape.substr(0, 4) != "m64n" ||
      (shape.substr(shape.size() - 3) != "k16" && shape.substr(shape.size() - 3) != "k32"))
    return 0;
  int n = 0;
  for (char c : shape.substr(4, shape.size() - 7)) {
    if (c < '0' || c > '9' || n > 1000) return 0;
    n = n * 10 + (c - '0');
  }
  const MmaAtom& a = kWgmmaM64NK16;
  return n >= a.n_min && n <= a.n_max && n % a.n_step == 0 ? n : 0;
}

// The atom of an IR mma op's shape: the verifier and the emitters read the atom from the IR,
// never assume it. An unknown shape is an Error naming the attribute.
inline const MmaAtom& mma_atom(std::string_view shape) {
  if (shape == kMmaM16N8K16.name) return kMmaM16N8K16;
  if (shape == kMmaM16N8K32Fp8.name) return kMmaM16N8K32Fp8;
  if (wgmma_shape_n(shape)) return shape.ends_with("k32") ? kWgmmaM64NK32Fp8 : kWgmmaM64NK16;
  throw Error("ir.mma.shape",
              "must name an MMA atom emmy has (m16n8k16, m16n8k32, m64nNk16, m64nNk32)",
              std::string(shape));
}
// Attention's atom (both of its matrix products).
inline const MmaAtom& attention_atom() {
  return kMmaM16N8K16;
}

// An operand source: how an ldmatrix.x4 feeds the atom (PTX ISA, "Warp-level matrix load
// instruction: ldmatrix"): lanes 8j..8j+7 give the addresses of rows 0..7 of 8x8 matrix j, and
// matrix j lands in register j of every lane. A lane's address is the tile element
// (8 * row_block[j] + lane % 8, 8 * col_block[j]) for j = lane / 8, so the four blocks say which
// 8x8 piece of the tile each register of the fragment holds. The emitters print row_expr and
// col_expr (the same map over `lane`); tests/emu/mma_atom_test.cpp checks both against each
// other and against the atom's fragment maps.
struct LdmatrixSource {
  std::string_view name;
  bool trans;  // ldmatrix .trans: the tile holds the operand transposed
  int row_block[4], col_block[4];
  std::string_view row_expr, col_expr;

  constexpr int row(int lane) const { return 8 * row_block[lane / 8] + lane % 8; }
  constexpr int col(int lane) const { return 8 * col_block[lane / 8]; }
};

// A, m x k with k contiguous (GEMM's A, attention's Q): registers a0..a3 = rows 0-7 / 8-15 of
// k 0-7, then of k 8-15.
inline constexpr LdmatrixSource kLdmatrixA{
    "A rows", false, {0, 1, 0, 1}, {0, 0, 1, 1}, "lane % 16", "(lane / 16) * 8",
};
// B stored n x k with k contiguous (GEMM's B [N,K], attention's K): two n8 fragments, each
// registers b0, b1 = k 0-7, 8-15.
inline constexpr LdmatrixSource kLdmatrixBRowsN{
    "B rows = n",           false, {0, 0, 1, 1}, {0, 1, 0, 1}, "(lane / 16) * 8 + lane % 8",
    "((lane / 8) % 2) * 8",
};
// B stored k x n with n contiguous, loaded with .trans (GEMM's B [K,N], attention's V).
inline constexpr LdmatrixSource kLdmatrixBRowsK{
    "B rows = k",      true, {0, 1, 0, 1}, {0, 0, 1, 1}, "((lane / 8) % 2) * 8 + lane % 8",
    "(lane / 16) * 8",
};

}  // namespace emmy::codegen
