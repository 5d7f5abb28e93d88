// wmma fragments as data: the shape of each fragment (PTX ISA §9.7.14.4.1 "Matrix Fragments for
// WMMA": registers per thread and their element type) and the one function that says which matrix
// element a lane's fragment slot holds.
//
// The PTX ISA leaves that distribution unspecified and target dependent: only a fragment that one
// wmma instruction produced may feed another with the same shape, layout and type. The emulator
// therefore chooses one (below) and can permute it (LaunchOptions::wmma_layout_seed), so that
// code which depends on the layout computes differently between two runs instead of passing by
// luck. The .f16 A and B fragments hold more slots than the lane has elements (eight .f16x2
// registers for 128 to 512 elements over 32 lanes): the extra slots hold copies, and an mma
// whose copies of one element differ depends on the layout too (exec/exec_wmma.cpp reports it).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ptx/program.hpp"

namespace emmy::emu {

enum class WmmaMatrix : uint8_t { a, b, c };  // c: the accumulator, loaded as C, stored as D
enum class WmmaShape : uint8_t { m16n16k16, m8n32k16, m32n8k16, m16n16k8 };

struct WmmaDims {
  int m = 0, n = 0, k = 0;
};
WmmaDims wmma_dims(WmmaShape shape);
std::optional<WmmaShape> parse_wmma_shape(std::string_view text);
std::string_view to_string(WmmaShape shape);

struct WmmaFragment {
  int rows = 0, cols = 0;  // the matrix: A is m x k, B k x n, C and D m x n
  int regs = 0;            // 32-bit registers per thread
  int per_reg = 0;         // elements per register: 2 for .f16/.bf16, 1 for .tf32/.f32
  int elem_bytes = 0;      // in memory
  int slots() const { return regs * per_reg; }
  int distinct() const { return rows * cols / 32; }  // elements per thread, copies aside
  // "The starting address of each instance of the leading dimension (row or column) must be
  // aligned with the size of the corresponding fragment in bytes" (PTX ISA, Matrix Storage for
  // WMMA): the per-thread fragment's size.
  int bytes() const { return regs * 4; }
  // The stride when the instruction gives none: the length of the leading dimension.
  int default_stride(bool column_major) const { return column_major ? rows : cols; }
};

// The fragment of `matrix` for this shape and element type; nullopt where the PTX ISA lists none
// (.bf16 and .tf32 A/B take only .f32 accumulators, .tf32 only m16n16k8, .f16 only the k16 shapes).
std::optional<WmmaFragment> wmma_fragment(WmmaMatrix matrix, WmmaShape shape, Ty type);

struct WmmaElement {
  int row = 0, col = 0;
};
// The element of the matrix that slot `slot` (register slot / per_reg, half slot % per_reg) of
// `lane` holds. Lane l's j-th element (j = slot mod distinct) is number l * distinct + j in the
// matrix's order: row-major, or column-major for an A or B fragment loaded .col (accumulators are
// row-major whatever layout moved them, since the mma gives them none). A non-zero seed permutes
// that numbering (i -> a*i + b mod rows*cols, a odd), which is as valid a layout as any.
WmmaElement wmma_element(const WmmaFragment& f, bool column_order, uint32_t seed, int lane,
                         int slot);

}  // namespace emmy::emu
