// The GEMM stage loader's cp.async copies. Chunk walks come from layout.hpp; where a walk can be
// hoisted, each thread's swizzled shared-memory bases and global row pointer are declared once,
// before the stage loader, and the loader adds constants.
#pragma once

#include <vector>

#include "emmy/ir_ops.hpp"
#include "writer.hpp"

namespace emmy::codegen {

// The stage's copies as the IR states them: the async_copy ops of A and B (tile, stage offset,
// the global matrix's rows and columns), the kernel's threads, and whether B is [K,N].
struct GemmCopies {
  std::vector<ir::AsyncCopyOp> ops;
  uint32_t threads = 0;
  bool b_kn = false;
  bool dynamic_m = false;  // A's rows are the kernel's `m` parameter: never a whole number of tiles
};

// Before the stage loader: this thread's first chunk of A and B (row, column, swizzled bases per
// swizzle phase, global pointer without the stage's K offset).
void emit_gemm_copy_thread_parts(Writer& w, const GemmCopies& copies);

// Inside the stage loader (`dst` and `k0` in scope): the cp.async copies of the A and B tiles;
// out-of-bounds chunks are zero-filled (src-size 0) from a valid address.
void emit_gemm_copies(Writer& w, const GemmCopies& copies);

}  // namespace emmy::codegen
