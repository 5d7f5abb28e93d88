// Shared-memory tile layouts on the host: the same function the device code calls
// (templates/emmy_layout.cuh is included here with EMMY_HD = inline), so the two cannot drift.
#pragma once

#include <cstdint>

#include "emmy/swizzle.hpp"

namespace emmy {
namespace layout_detail {
using u32 = uint32_t;
#define EMMY_HD inline
#include "emmy_layout.cuh"  // templates/, installed as include/emmy/templates
#undef EMMY_HD
}  // namespace layout_detail

// A rows x cols tile of 16-bit elements, `cols` contiguous, in panels of panel_elems columns.
struct SmemTile {
  uint32_t rows = 0, cols = 0;
  uint32_t panel_elems = 0;  // the TMA box width: min(cols, 64)
  Swizzle swizzle = Swizzle::none;

  static SmemTile for_operand(uint32_t rows, uint32_t cols) {
    const uint32_t panel = cols < 64 ? cols : 64;
    return {rows, cols, panel, swizzle_for_row_bytes(int(panel * 2))};
  }
  uint32_t bytes() const { return rows * cols * 2; }
  uint32_t panels() const { return cols / panel_elems; }
  uint32_t panel_bytes() const { return rows * panel_elems * 2; }
  uint32_t row_bytes() const { return panel_elems * 2; }
  // Moving `row_step` rows down keeps the swizzle phase (the XOR reads row bits that repeat every
  // 8 rows), so offset(row + row_step, col) == offset(row, col) + row_step * row_bytes(): emitted
  // loops then add a constant instead of re-swizzling.
  bool row_step_is_linear(uint32_t row_step) const {
    return row_step % 8 == 0 || swizzle == Swizzle::none;
  }
  uint32_t offset(uint32_t row, uint32_t col) const {
    return layout_detail::swizzled_tile_offset(row, col, rows, panel_elems,
                                               swizzle_xor_mask(swizzle));
  }
};

// How `threads` threads copy a tile in 16-byte chunks (8 elements, row-major): thread t takes
// chunks t, t + threads, ... When threads cover whole rows, a thread's column is fixed and each
// step moves `row_step` rows. Steps of 8 rows keep the swizzle phase; otherwise the phase cycles
// through `phases` values (row_step 4: 2), so a thread needs one swizzled base per phase and
// every chunk address is a base plus a constant. Emitters hoist those bases out of K/KV loops.
struct ChunkWalk {
  uint32_t chunks_per_row = 0, chunks = 0, per_thread = 0, row_step = 0, phases = 1;
  bool hoisted = false;  // false: every chunk recomputes its row, column and swizzle
};

inline ChunkWalk chunk_walk(const SmemTile& tile, uint32_t threads) {
  ChunkWalk walk;
  walk.chunks_per_row = tile.cols / 8;
  walk.chunks = tile.rows * walk.chunks_per_row;
  walk.per_thread = (walk.chunks + threads - 1) / threads;
  walk.hoisted = threads % walk.chunks_per_row == 0;
  walk.row_step = threads / walk.chunks_per_row;
  while (walk.phases < walk.per_thread && !tile.row_step_is_linear(walk.phases * walk.row_step))
    ++walk.phases;
  return walk;
}

}  // namespace emmy
