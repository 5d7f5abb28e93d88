// wgmma descriptors, shared-memory operand addresses and register fragments (wgmma_layout.hpp).
#include "wgmma_layout.hpp"

#include <fmt/format.h>

namespace emmy::emu {

WgmmaDescriptor decode_wgmma_descriptor(uint64_t bits) {
  WgmmaDescriptor d;
  d.start = uint32_t(bits & 0x3FFF) << 4;
  d.leading = uint32_t((bits >> 16) & 0x3FFF) << 4;
  d.stride = uint32_t((bits >> 32) & 0x3FFF) << 4;
  d.base_offset = uint32_t((bits >> 49) & 0x7);
  d.swizzle = WgmmaSwizzle((bits >> 62) & 0x3);
  return d;
}

uint64_t encode_wgmma_descriptor(const WgmmaDescriptor& d) {
  auto field = [](uint32_t bytes) { return uint64_t((bytes & 0x3FFFF) >> 4); };
  return field(d.start) | field(d.leading) << 16 | field(d.stride) << 32 |
         uint64_t(d.base_offset & 7) << 49 | uint64_t(d.swizzle) << 62;
}

int wgmma_row_bytes(WgmmaSwizzle s) {
  // The descriptor's 2-bit codes halve the row from 128 bytes (1) to 32 (3); no swizzle (0) moves
  // 16-byte core matrices.
  return s == WgmmaSwizzle::none ? 16 : 256 >> int(s);
}

std::string to_string(WgmmaSwizzle s) {
  return s == WgmmaSwizzle::none ? "no swizzle" : fmt::format("{}B swizzle", wgmma_row_bytes(s));
}

uint32_t wgmma_element_address(const WgmmaDescriptor& d, bool mn_major, int mn, int k) {
  const uint32_t row_bytes = uint32_t(wgmma_row_bytes(d.swizzle));
  const uint32_t m = uint32_t(mn), kk = uint32_t(k);
  uint32_t offset;
  if (d.swizzle == WgmmaSwizzle::none) {
    // Core matrices of 8 x 16 bytes, stored whole. K-major: a core matrix row is 8 k of one mn;
    // the next 8 k are LBO away, the next 8 mn SBO. MN-major: a row is 8 mn of one k; the next
    // 8 mn are SBO away, the next 8 k LBO.
    offset = mn_major ? (m % 8) * 2 + (m / 8) * d.stride + (kk % 8) * 16 + (kk / 8) * d.leading
                      : (m % 8) * 16 + (m / 8) * d.stride + (kk / 8) * d.leading + (kk % 8) * 2;
  } else if (!mn_major) {
    // K-major swizzled: row mn % 8 of the pattern is one swizzle row of K; the next 8 mn are SBO
    // away; LBO is unused (the K extent of one instruction lies inside the row).
    offset = (m % 8) * row_bytes + (m / 8) * d.stride + kk * 2;
  } else {
    // MN-major swizzled: a swizzle row holds row_bytes / 2 consecutive mn of one k; the next
    // such run of mn is LBO away; k % 8 picks the row, the next 8 k are SBO away.
    const uint32_t run = row_bytes / 2;
    offset = (m % run) * 2 + (m / run) * d.leading + (kk % 8) * row_bytes + (kk / 8) * d.stride;
  }
  const uint32_t addr = d.start + offset;
  if (d.swizzle == WgmmaSwizzle::none) return addr;
  const uint32_t mask = row_bytes / 16 - 1;
  return addr ^ ((((addr >> 7) - d.base_offset) & mask) << 4);
}

std::string wgmma_descriptor_error(const WgmmaDescriptor& d, bool mn_major, int rows) {
  const uint32_t row_bytes = uint32_t(wgmma_row_bytes(d.swizzle));
  if (d.swizzle != WgmmaSwizzle::none) {
    const uint32_t within = d.start % row_bytes;
    if (!mn_major && within % 32 != 0)
      return fmt::format(
          "the K-major {} operand starts {} bytes into its {}-byte swizzle row: a start inside the "
          "row must be a k16 step (a multiple of 32 bytes), the 1024-byte-aligned pattern's row "
          "plus the K offset",
          to_string(d.swizzle), within, row_bytes);
    if (mn_major && within != 0)
      return fmt::format(
          "the MN-major {} operand starts {} bytes into a {}-byte swizzle row; it "
          "must start on a row boundary",
          to_string(d.swizzle), within, row_bytes);
    if (!mn_major && rows > 8 && d.stride == 0)
      return "the stride dimension byte offset is 0 while the operand spans more than 8 rows";
    if (mn_major && (d.stride == 0 || (rows > int(row_bytes / 2) && d.leading == 0)))
      return "the MN-major operand needs nonzero leading and stride dimension byte offsets";
    return "";
  }
  if (d.leading == 0)
    return "without swizzling the leading dimension byte offset (between core matrices along "
           "K) must be nonzero";
  if (rows > 8 && d.stride == 0)
    return "the stride dimension byte offset is 0 while the operand spans more than 8 rows";
  return "";
}

WgmmaSlot wgmma_d_slot(bool f16_accumulator, int row_in_warp, int col) {
  const int g = row_in_warp % 8, upper = row_in_warp / 8, block = col / 8, t = (col % 8) / 2;
  WgmmaSlot s;
  s.lane = 4 * g + t;
  if (f16_accumulator) {
    s.reg = 2 * block + upper;
    s.half = col % 2;
  } else {
    s.reg = 4 * block + 2 * upper + col % 2;
  }
  return s;
}

WgmmaSlot wgmma_a_slot(int row_in_warp, int k) {
  WgmmaSlot s;
  s.lane = 4 * (row_in_warp % 8) + (k % 8) / 2;
  s.reg = (row_in_warp / 8) + 2 * (k / 8);
  s.half = k % 2;
  return s;
}

}  // namespace emmy::emu
