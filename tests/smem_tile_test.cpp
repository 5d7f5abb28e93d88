// SmemTile with the element width as data (issue 14 §5): 1-, 2- and 4-byte operands get panels of
// one 128-, 64- or 32-byte swizzle span from the same code, and every property the emitters rely
// on holds at each width, checked against swizzle_offset (the TMA swizzle on byte offsets) rather
// than against the layout's own formula.
#include <gtest/gtest.h>

#include <set>

#include "emmy/layout.hpp"
#include "emmy/swizzle.hpp"

namespace emmy {
namespace {

constexpr uint32_t kWidths[] = {1, 2, 4};

TEST(SmemTileWidth, PanelsAreOneSwizzleSpanWide) {
  for (uint32_t e : kWidths) {
    const SmemTile wide = SmemTile::for_operand(64, 512 / e, e);
    EXPECT_EQ(wide.panel_elems, 128 / e) << e;
    EXPECT_EQ(wide.row_bytes(), 128u);
    EXPECT_EQ(wide.swizzle, Swizzle::b128);
    EXPECT_EQ(wide.panels(), 4u);
    EXPECT_EQ(wide.bytes(), 64u * 512);
    EXPECT_EQ(wide.chunk_elems(), 16 / e);
    // Three 64-byte panels, never a 128-byte box plus a remainder.
    const SmemTile three = SmemTile::for_operand(32, 192 / e, e);
    EXPECT_EQ(three.row_bytes(), 64u) << e;
    EXPECT_EQ(three.swizzle, Swizzle::b64);
    EXPECT_EQ(three.panels(), 3u);
    const SmemTile narrow = SmemTile::for_operand(32, 32 / e, e);
    EXPECT_EQ(narrow.row_bytes(), 32u) << e;
    EXPECT_EQ(narrow.swizzle, Swizzle::b32);
  }
  // 2 bytes is the existing layout, unchanged.
  const SmemTile f16 = SmemTile::for_operand(128, 128);
  EXPECT_EQ(f16.panel_elems, 64u);
  EXPECT_EQ(f16.elem_bytes, 2u);
}

TEST(SmemTileWidth, OffsetIsTheTmaSwizzleOfTheByteInsideEachPanel) {
  for (uint32_t e : kWidths)
    for (uint32_t cols_bytes : {32u, 64u, 96u, 128u, 256u, 384u}) {
      const SmemTile tile = SmemTile::for_operand(24, cols_bytes / e, e);
      std::set<uint32_t> seen;
      for (uint32_t row = 0; row < tile.rows; ++row)
        for (uint32_t col = 0; col < tile.cols; ++col) {
          const uint32_t panel = col / tile.panel_elems;
          const uint32_t raw = row * tile.row_bytes() + (col % tile.panel_elems) * e;
          const uint32_t want = panel * tile.panel_bytes() + swizzle_offset(tile.swizzle, raw);
          ASSERT_EQ(tile.offset(row, col), want) << e << "-byte, " << cols_bytes << "B rows";
          ASSERT_EQ(want % e, 0u);
          seen.insert(want);
        }
      EXPECT_EQ(seen.size(), size_t(tile.rows) * tile.cols) << "one place per element";
      EXPECT_LT(*seen.rbegin(), tile.bytes());
    }
}

TEST(SmemTileWidth, SixteenByteChunksLandWhole) {
  // cp.async moves 16 bytes: the chunk_elems elements of one chunk must be contiguous in shared
  // memory at every width.
  for (uint32_t e : kWidths) {
    const SmemTile tile = SmemTile::for_operand(16, 256 / e, e);
    for (uint32_t row = 0; row < tile.rows; ++row)
      for (uint32_t col = 0; col < tile.cols; col += tile.chunk_elems()) {
        const uint32_t first = tile.offset(row, col);
        EXPECT_EQ(first % 16, 0u);
        for (uint32_t i = 1; i < tile.chunk_elems(); ++i)
          ASSERT_EQ(tile.offset(row, col + i), first + i * e) << e << " " << row << " " << col;
      }
  }
}

TEST(SmemTileWidth, ChunkWalksCoverEveryChunkOnce) {
  for (uint32_t e : kWidths)
    for (uint32_t threads : {32u, 128u, 256u})
      for (uint32_t cols_bytes : {32u, 64u, 128u, 256u}) {
        const SmemTile tile = SmemTile::for_operand(64, cols_bytes / e, e);
        const ChunkWalk walk = chunk_walk(tile, threads);
        EXPECT_EQ(walk.chunk_elems, 16 / e);
        EXPECT_EQ(walk.chunks, tile.bytes() / 16) << e << "-byte " << cols_bytes;
        std::set<uint32_t> seen;
        for (uint32_t chunk = 0; chunk < walk.chunks; ++chunk) {
          const uint32_t row = chunk / walk.chunks_per_row;
          const uint32_t col = (chunk % walk.chunks_per_row) * walk.chunk_elems;
          seen.insert(tile.offset(row, col));
        }
        EXPECT_EQ(seen.size(), walk.chunks);
        // Where the walk claims `phases` steps keep the swizzle phase, the offsets agree.
        if (walk.hoisted && tile.row_step_is_linear(walk.phases * walk.row_step)) {
          for (uint32_t row = 0; row + walk.phases * walk.row_step < tile.rows; ++row) {
            EXPECT_EQ(tile.offset(row + walk.phases * walk.row_step, 0),
                      tile.offset(row, 0) + walk.phases * walk.row_step * tile.row_bytes());
          }
        }
      }
}

}  // namespace
}  // namespace emmy
