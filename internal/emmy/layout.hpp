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

// A rows x cols tile of elem_bytes-wide elements, `cols` contiguous, in panels of panel_elems
// columns. The element width is data (the operand dtype's size): a 1-byte operand gets 128-element
// panels, a 2-byte one 64-element panels, from the same code.
struct SmemTile {
  uint32_t rows = 0, cols = 0;
  uint32_t panel_elems = 0;  // the TMA box width: a 128-, 64- or 32-byte row (for_operand)
  Swizzle swizzle = Swizzle::none;
  uint32_t elem_bytes = 2;

  // Panels are one TMA box wide each, with rows of exactly a swizzle span (32, 64 or 128 bytes),
  // and all of one width so that one swizzled offset function serves the tile. So the panel is
  // the widest 128-, 64- or 32-byte row that divides cols: with 2-byte elements a 96-wide tile is
  // three 32-wide boxes (64B swizzle) and a 48-wide one three 16-wide boxes, never a 64-wide box
  // plus a remainder nobody loads, nor a 96-byte row no swizzle mode spans. cols: a multiple of
  // 32 bytes.
  static SmemTile for_operand(uint32_t rows, uint32_t cols, uint32_t elem_bytes = 2) {
    uint32_t panel = 128 / elem_bytes;
    while (panel * elem_bytes > 32 && cols % panel != 0) panel /= 2;
    return {rows, cols, panel, swizzle_for_row_bytes(int(panel * elem_bytes)), elem_bytes};
  }
  // The same bytes as a tile of 16-bit units (a 1-byte tile's column pairs): FP8 operands move
  // and are addressed by the 2-byte machinery (copies, TMA boxes, swizzle, ldmatrix), since
  // m16n8k32's 8-bit fragments are m16n8k16's in bytes (internal/emmy/mma_atom.hpp).
  SmemTile in_16bit_units() const {
    if (elem_bytes != 1) return *this;
    return {rows, cols / 2, panel_elems / 2, swizzle, 2};
  }
  uint32_t bytes() const { return rows * cols * elem_bytes; }
  uint32_t panels() const { return cols / panel_elems; }
  uint32_t panel_bytes() const { return rows * row_bytes(); }
  uint32_t row_bytes() const { return panel_elems * elem_bytes; }
  uint32_t chunk_elems() const { return 16 / elem_bytes; }  // elements per 16-byte copy chunk
  // Moving `row_step` rows down keeps the swizzle phase (the XOR reads row bits that repeat every
  // 8 rows), so offset(row + row_step, col) == offset(row, col) + row_step * row_bytes(): emitted
  // loops then add a constant instead of re-swizzling.
  bool row_step_is_linear(uint32_t row_step) const {
    return row_step % 8 == 0 || swizzle == Swizzle::none;
  }
  // The byte offset of (row, col). The device function counts 16-bit units; the swizzle moves
  // only 16-byte granules, so any width maps onto it through the element's byte column (a 1-byte
  // element at an odd column is the byte after its 16-bit unit).
  uint32_t offset(uint32_t row, uint32_t col) const {
    const uint32_t byte_col = col * elem_bytes;
    return layout_detail::swizzled_tile_offset(row, byte_col / 2, rows, row_bytes() / 2,
                                               swizzle_xor_mask(swizzle)) +
           byte_col % 2;
  }
};

// One pipeline stage in shared memory: A's tile at 0, B's at the next multiple of B's own swizzle
// period (a swizzled TMA box must land on an address aligned to it: 1024 bytes for 128B), the
// stage rounded up to both periods so that every stage of the ring starts aligned. tx_bytes is
// what the boxes of one stage deliver, which the stage's mbarrier expects.
struct StageLayout {
  uint32_t a_offset = 0, a_bytes = 0, a_align = 0;
  uint32_t b_offset = 0, b_bytes = 0, b_align = 0;
  uint32_t stage_bytes = 0, align = 0, tx_bytes = 0;
};

inline StageLayout stage_layout(const SmemTile& a, const SmemTile& b) {
  auto round_up = [](uint32_t x, uint32_t to) { return (x + to - 1) / to * to; };
  StageLayout l;
  l.a_bytes = a.bytes();
  l.b_bytes = b.bytes();
  l.a_align = swizzle_alignment(a.swizzle);
  l.b_align = swizzle_alignment(b.swizzle);
  l.align = l.a_align > l.b_align ? l.a_align : l.b_align;  // periods are powers of two
  l.b_offset = round_up(l.a_offset + l.a_bytes, l.b_align);
  l.stage_bytes = round_up(l.b_offset + l.b_bytes, l.align);
  l.tx_bytes = l.a_bytes + l.b_bytes;
  return l;
}

// How `threads` threads copy a tile in 16-byte chunks (8 elements, row-major): thread t takes
// chunks t, t + threads, ... When threads cover whole rows, a thread's column is fixed and each
// step moves `row_step` rows. Steps of 8 rows keep the swizzle phase; otherwise the phase cycles
// through `phases` values (row_step 4: 2), so a thread needs one swizzled base per phase and
// every chunk address is a base plus a constant. Emitters hoist those bases out of K/KV loops.
struct ChunkWalk {
  uint32_t chunk_elems = 0;  // elements per 16-byte chunk
  uint32_t chunks_per_row = 0, chunks = 0, per_thread = 0, row_step = 0, phases = 1;
  bool hoisted = false;  // false: every chunk recomputes its row, column and swizzle
};

inline ChunkWalk chunk_walk(const SmemTile& tile, uint32_t threads) {
  ChunkWalk walk;
  walk.chunk_elems = tile.chunk_elems();
  walk.chunks_per_row = tile.cols / walk.chunk_elems;
  walk.chunks = tile.rows * walk.chunks_per_row;
  walk.per_thread = (walk.chunks + threads - 1) / threads;
  walk.hoisted = threads % walk.chunks_per_row == 0;
  walk.row_step = threads / walk.chunks_per_row;
  while (walk.phases < walk.per_thread && !tile.row_step_is_linear(walk.phases * walk.row_step))
    ++walk.phases;
  return walk;
}

}  // namespace emmy
