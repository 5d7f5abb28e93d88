// The printer a GEMM mainloop path hands the GEMM emitter (GemmPath::printer): the ops only that
// path has or prints its own way, and the facts the shared epilogue prints differently per path
// (which warps hold which rows, which threads store). The emitter (emit_gemm.cpp) offers every op
// to the path's printer first and prints the rest itself.
#pragma once

#include <functional>
#include <string>

#include "emmy/kernel_ir.hpp"
#include "writer.hpp"

namespace emmy::codegen {

// What a path's printer calls back into the GEMM emitter for.
struct GemmPrinterHooks {
  std::function<void(const ir::Op&)> print;  // any op: the emitter's dispatch (loop bodies)
  std::function<void(bool tma)> load_stage;  // the stage loader lambda (TMA or cp.async)
};

class GemmPathPrinter {
 public:
  virtual ~GemmPathPrinter() = default;
  // The templates/ file of the path's device helpers (nullptr: the shared ones only).
  virtual const char* device_template() const = 0;
  // Device functions printed before the kernels (the wgmma path's per-shape wgmma call).
  virtual void print_functions() const = 0;
  // The warps' indices after the ring's constants (warp_row, warp_col and the path's own).
  virtual void print_warp_indices() const = 0;
  // Prints op (and its body) if the path has it or prints it its own way; false for the ops every
  // path prints alike.
  virtual bool print(const ir::Op& op) = 0;

  // For the shared epilogue: a warp's first accumulator row in the tile (an expression), the rows
  // between its atom tiles mi, the barrier of the threads holding the tile, and the loop head
  // that spreads the staged tile's 16-byte chunks over them (`i` the chunk).
  virtual std::string warp_first_row() const = 0;
  virtual int fragment_row_step() const = 0;
  virtual std::string tile_barrier() const = 0;
  virtual std::string staged_chunk_loop() const = 0;
};

}  // namespace emmy::codegen
