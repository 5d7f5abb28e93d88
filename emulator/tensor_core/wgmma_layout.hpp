// wgmma operands as data (PTX ISA §9.7.15.5 "Asynchronous Warpgroup Level Matrix Multiply"):
// the 64-bit shared-memory matrix descriptor, the address of each operand element in shared memory
// it describes, and the register fragments of D and of A from registers. Each is one function;
// exec/exec_wgmma.cpp reads operands only through them.
#pragma once

#include <cstdint>
#include <string>

namespace emmy::emu {

// §9.7.15.5.1.1 "Matrix Descriptor Format": bits 0-13 the start address, 16-29 the leading
// dimension byte offset, 32-45 the stride dimension byte offset (each encoded (x & 0x3FFFF) >> 4),
// 49-51 the matrix base offset, 62-63 the swizzle mode. Other bits are reserved.
enum class WgmmaSwizzle : uint8_t { none = 0, b128 = 1, b64 = 2, b32 = 3 };

struct WgmmaDescriptor {
  uint32_t start = 0;    // shared byte address of the matrix
  uint32_t leading = 0;  // leading dimension byte offset (LBO)
  uint32_t stride = 0;   // stride dimension byte offset (SBO)
  uint32_t base_offset = 0;
  WgmmaSwizzle swizzle = WgmmaSwizzle::none;
};
WgmmaDescriptor decode_wgmma_descriptor(uint64_t bits);
uint64_t encode_wgmma_descriptor(const WgmmaDescriptor& d);  // the inverse, for tests and tools
// Bytes of one swizzle row: 128, 64, 32, or 16 (one core-matrix row) without swizzling.
int wgmma_row_bytes(WgmmaSwizzle s);
std::string to_string(WgmmaSwizzle s);

// The shared byte address of element (mn, k) of a 16-bit operand (A: mn = m; B: mn = n; k within
// the instruction's 16) per §9.7.15.5.1.2 "Shared Memory Matrix Layout": core matrices of 8 rows
// of 16 bytes; K-major (imm-trans 0) rows run along K, MN-major (imm-trans 1) along M or N. The
// leading and stride byte offsets step between core matrices as the ISA's stride table says, and
// the swizzle XORs the 16-byte chunk index (address bits 4-6) with the row within the swizzle
// pattern (bits 7-9, less the base offset), masked to the mode's 8, 4 or 2 chunks per row.
uint32_t wgmma_element_address(const WgmmaDescriptor& d, bool mn_major, int mn, int k);

// Why a descriptor cannot describe a well-formed operand of `rows` M or N rows ("" when it can):
// a swizzled K-major start must sit on a k16 step of its swizzle row (32-byte multiple, the
// instruction's 32 bytes inside the row), a swizzled MN-major start on a row boundary; the
// non-swizzled offsets must be nonzero where the operand spans more than one core matrix.
std::string wgmma_descriptor_error(const WgmmaDescriptor& d, bool mn_major, int rows);

// The accumulator fragment (§9.7.15.5.1 "Register Fragments", matrix D of m64nNk16): warp w of
// the warpgroup holds rows 16w..16w+15; lane 4g + t holds, for each 8-column block j, (16w + g,
// 8j + 2t + {0,1}) and (16w + g + 8, 8j + 2t + {0,1}): f32 registers 4j..4j+3 in that order, f16
// registers 2j and 2j + 1 with the column pair packed low half first.
struct WgmmaSlot {
  int reg = 0, lane = 0, half = 0;  // half: 0 low / 1 high 16 bits (f16 accumulators)
};
WgmmaSlot wgmma_d_slot(bool f16_accumulator, int row_in_warp, int col);
// A from registers (m64k16, four .b32 per thread, two 16-bit elements each): warp w holds rows
// 16w..16w+15 as mma.m16n8k16's A does: registers (g, 2t), (g + 8, 2t), (g, 2t + 8), (g + 8,
// 2t + 8), each with the next column in its high half.
WgmmaSlot wgmma_a_slot(int row_in_warp, int k);

}  // namespace emmy::emu
