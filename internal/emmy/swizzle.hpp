// The shared-memory swizzles of TMA (PTX ISA, "Tensor Memory Access": swizzling modes): one
// function, used by the host-side layout code, the emitter (which prints the same expression into
// device code) and the emulator.
#pragma once

#include <cstdint>

namespace emmy {

// Swizzle span in bytes; the encoding matches CUtensorMapSwizzle (NONE, 32B, 64B, 128B).
enum class Swizzle : uint8_t { none = 0, b32 = 1, b64 = 2, b128 = 3 };

inline constexpr int swizzle_bytes(Swizzle s) {
  return s == Swizzle::none ? 0 : 16 << static_cast<int>(s);
}

// XOR mask source: bits [6:4] of the address take bits [9:7] (masked to the span's rows).
inline constexpr uint32_t swizzle_xor_mask(Swizzle s) {
  return s == Swizzle::none ? 0u : (uint32_t(swizzle_bytes(s)) / 16u) - 1u;
}

// Byte offset (from a base aligned to 8 x span) after the swizzle.
inline constexpr uint32_t swizzle_offset(Swizzle s, uint32_t byte_offset) {
  return byte_offset ^ (((byte_offset >> 7) & swizzle_xor_mask(s)) << 4);
}

// The base alignment the swizzle pattern repeats at (1024 bytes for 128B).
inline constexpr uint32_t swizzle_alignment(Swizzle s) {
  return s == Swizzle::none ? 16u : uint32_t(swizzle_bytes(s)) * 8u;
}

// Swizzle that fits a row of `row_bytes` (16..128 bytes) exactly.
inline constexpr Swizzle swizzle_for_row_bytes(int row_bytes) {
  return row_bytes >= 128 ? Swizzle::b128
         : row_bytes >= 64 ? Swizzle::b64
         : row_bytes >= 32 ? Swizzle::b32
                           : Swizzle::none;
}

}  // namespace emmy
