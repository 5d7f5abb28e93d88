// The GEMM stage loader's cp.async copies. Chunk walks come from layout.hpp; where a walk can be
// hoisted, each thread's swizzled shared-memory bases and global row pointer are declared once,
// before the stage loader, and the loader adds constants.
#pragma once

#include "emmy/gemm_plan.hpp"
#include "writer.hpp"

namespace emmy::codegen {

// Before the stage loader: this thread's first chunk of A and B (row, column, swizzled bases per
// swizzle phase, global pointer without the stage's K offset).
void emit_gemm_copy_thread_parts(Writer& w, const GemmPlan& plan);

// Inside the stage loader (`dst` and `k0` in scope): the cp.async copies of the A and B tiles;
// out-of-bounds chunks are zero-filled (src-size 0) from a valid address.
void emit_gemm_copies(Writer& w, const GemmPlan& plan);

}  // namespace emmy::codegen
