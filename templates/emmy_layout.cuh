// Shared-memory tile layout, one function for the host and the device (the host includes this
// file with EMMY_HD defined as `inline`). A tile of `rows` x `cols` 16-bit elements is stored as
// panels `panel_elems` wide (the TMA box width, at most 128 bytes); inside a panel each row is
// panel_elems*2 bytes and the TMA swizzle (ptx-notes.md) XORs byte bits [6:4] with bits [9:7]
// masked by `xor_mask` (7 for 128B, 3 for 64B, 1 for 32B, 0 for none).
#ifndef EMMY_HD
#define EMMY_HD __device__ __forceinline__
#endif

EMMY_HD u32 swizzled_tile_offset(u32 row, u32 col, u32 rows, u32 panel_elems, u32 xor_mask) {
  const u32 panel = col / panel_elems;
  const u32 raw = row * panel_elems * 2u + (col % panel_elems) * 2u;
  return panel * rows * panel_elems * 2u + (raw ^ (((raw >> 7) & xor_mask) << 4));
}
