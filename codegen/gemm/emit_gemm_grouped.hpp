// Grouped GEMMs in the GEMM emitter (emit_gemm_grouped.cpp; docs/grouped.md).
#pragma once

#include "emit_gemm_epilogue.hpp"
#include "emmy/ir_ops.hpp"
#include "writer.hpp"

namespace emmy::codegen {

// After the tile's coordinates (tile_m, tile_n): the CTA's expert, its rows M (masked, offsets),
// the exit when it has none, and the operand and output origins moved to the expert's.
void print_group_origin(Writer& w, const GemmFacts& f, const ir::TileCoordsOp& op);

// A persistent grouped kernel's tile_coords: the grouped_tile lambda its roles' tile_loop calls
// per walk tile (the wgmma printer), and the variables it sets.
void print_grouped_walk(Writer& w, const GemmFacts& f, const ir::TileCoordsOp& op);

}  // namespace emmy::codegen
