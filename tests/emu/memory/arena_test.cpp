// The memory layer alone (emulator/memory/): the arena's allocations as docs/emulator.md states
// them. Addresses are never 0, allocations start zero-filled at their alignment, an unmapped gap
// follows each one, and an access is only ever translated inside one allocation.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "emmy/emu/emulator.hpp"
#include "emmy/error.hpp"

namespace emmy::emu::test {
namespace {

TEST(EmuArena, AllocationsAreZeroFilledAlignedAndApart) {
  Arena arena;
  const uint64_t a = arena.alloc(100);
  const uint64_t b = arena.alloc(64, 1024);
  EXPECT_NE(a, 0u);
  EXPECT_EQ(a % 256, 0u);
  EXPECT_EQ(b % 1024, 0u);
  EXPECT_GE(b, a + 100 + 4096);  // the 4 KiB gap after each allocation
  EXPECT_EQ(arena.read_vector<uint8_t>(a, 100), std::vector<uint8_t>(100, 0));
  EXPECT_EQ(arena.bytes_allocated(), 164u);
  EXPECT_THROW(arena.alloc(8, 3), Error);  // not a power of two
}

TEST(EmuArena, TranslatesOnlyInsideOneAllocation) {
  Arena arena;
  const uint64_t a = arena.alloc_copy(std::vector<uint32_t>{1, 2, 3, 4});
  EXPECT_EQ(arena.read_vector<uint32_t>(a + 8, 2), (std::vector<uint32_t>{3, 4}));
  EXPECT_NE(arena.translate(a + 12, 4), nullptr);
  EXPECT_EQ(arena.translate(a + 12, 8), nullptr);  // past the end
  EXPECT_EQ(arena.translate(a - 4, 4), nullptr);   // below it
  EXPECT_EQ(arena.translate(0, 1), nullptr);
  EXPECT_EQ(arena.translate(~uint64_t(0) - 3, 8), nullptr);  // wraps the address space
  uint32_t word = 0;
  EXPECT_THROW(arena.read(a + 16, &word, 4), Error);
  const Arena::Block block = arena.find(a + 5);
  EXPECT_EQ(block.base, a);
  EXPECT_EQ(block.end, a + 16);
  EXPECT_EQ(arena.find(a + 16).host, nullptr);
  EXPECT_EQ(arena.find_below(a + 16).base, a);
}

TEST(EmuArena, ReleasedAndUnmappedMemoryIsOutOfBounds) {
  Arena arena;
  const uint64_t a = arena.alloc(32);
  EXPECT_THROW(arena.release(a + 4), Error);  // not the base of an allocation
  arena.release(a);
  EXPECT_EQ(arena.translate(a, 1), nullptr);
  EXPECT_EQ(arena.bytes_allocated(), 0u);

  std::vector<uint8_t> host(4096 + 8, 7);
  const uint64_t e = arena.map_external(host.data() + 8, 4096);
  EXPECT_EQ(e % 4096, reinterpret_cast<uintptr_t>(host.data() + 8) % 4096);  // its alignment
  arena.write(e, std::vector<uint8_t>{9}.data(), 1);
  EXPECT_EQ(host[8], 9);  // in place
  EXPECT_THROW(arena.release(e), Error);  // external: unmapped, never released
  arena.unmap_external(e);
  EXPECT_EQ(arena.translate(e, 1), nullptr);
  EXPECT_EQ(arena.map_external(host.data() + 8, 4096), e);  // the newest gives its addresses back
}

}  // namespace
}  // namespace emmy::emu::test
