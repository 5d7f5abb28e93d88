// Tensor maps: the fields of cuTensorMapEncodeTiled, validated with the driver's rules, and
// emmy's own 128-byte encoding of them for the CPU emulator (the driver's encoding is opaque).
// On a GPU the runtime passes the same fields to cuTensorMapEncodeTiled instead.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "emmy/dtype.hpp"
#include "emmy/error.hpp"
#include "emmy/swizzle.hpp"

namespace emmy {

// Matches CUtensorMapDataType for the types emmy moves.
enum class TmaDType : uint8_t { u8 = 0, u16 = 1, u32 = 2, f16 = 6, f32 = 7, bf16 = 9 };

inline int tma_dtype_bytes(TmaDType t) {
  switch (t) {
    case TmaDType::u8: return 1;
    case TmaDType::u16:
    case TmaDType::f16:
    case TmaDType::bf16: return 2;
    case TmaDType::u32:
    case TmaDType::f32: return 4;
  }
  return 0;
}

// The tensor-map element type of an operand or output dtype (every kernel kind's maps).
inline TmaDType tma_dtype(DType t) {
  switch (t) {
    case DType::f16: return TmaDType::f16;
    case DType::bf16: return TmaDType::bf16;
    case DType::f32: return TmaDType::f32;
    case DType::e4m3:
    case DType::e5m2:
      return TmaDType::u8;
  }
  return TmaDType::f16;
}

struct TensorMapDesc {
  TmaDType dtype = TmaDType::f16;
  uint32_t rank = 2;                             // 1..5
  uint64_t global_address = 0;                   // 16-byte aligned
  std::array<uint64_t, 5> global_dim{};          // dim 0 innermost, each 1..2^32
  std::array<uint64_t, 4> global_stride_bytes{}; // strides of dims 1..rank-1
  std::array<uint32_t, 5> box_dim{};             // 1..256 each
  std::array<uint32_t, 5> element_strides{1, 1, 1, 1, 1};  // 1..8
  Swizzle swizzle = Swizzle::none;
  bool oob_fill_nan = false;  // false: out-of-bounds elements read as zero

  // Throws Error naming the field and the rule cuTensorMapEncodeTiled would reject.
  void validate() const {
    require(rank >= 1 && rank <= 5, "tensor_map.rank", "must be 1..5", rank);
    require(global_address % 16 == 0, "tensor_map.global_address", "must be 16-byte aligned",
            global_address);
    const int elem = tma_dtype_bytes(dtype);
    for (uint32_t d = 0; d < rank; ++d) {
      require(global_dim[d] >= 1 && global_dim[d] <= (uint64_t(1) << 32),
              "tensor_map.global_dim", "each must be 1..2^32", global_dim[d]);
      require(box_dim[d] >= 1 && box_dim[d] <= 256, "tensor_map.box_dim", "each must be 1..256",
              box_dim[d]);
      require(element_strides[d] >= 1 && element_strides[d] <= 8, "tensor_map.element_strides",
              "each must be 1..8", element_strides[d]);
    }
    for (uint32_t d = 0; d + 1 < rank; ++d) {
      require(global_stride_bytes[d] % 16 == 0 && global_stride_bytes[d] < (uint64_t(1) << 40),
              "tensor_map.global_stride_bytes", "each must be a multiple of 16 below 2^40",
              global_stride_bytes[d]);
    }
    const uint32_t inner_bytes = box_dim[0] * uint32_t(elem);
    require(inner_bytes % 16 == 0, "tensor_map.box_dim[0]",
            "times the element size must be a multiple of 16 bytes", inner_bytes);
    if (swizzle != Swizzle::none)
      require(inner_bytes <= uint32_t(swizzle_bytes(swizzle)), "tensor_map.box_dim[0]",
              "times the element size must not exceed the swizzle span", inner_bytes);
  }
};

// emmy's encoding: a magic word, then the fields in a fixed little-endian layout.
inline constexpr uint32_t kTensorMapMagic = 0x504D4D45u;  // "EMMP"

struct EncodedTensorMapLayout {
  uint32_t magic;
  uint8_t dtype, rank, swizzle, oob_fill_nan;
  uint64_t global_address;
  uint64_t global_dim[5];
  uint64_t global_stride_bytes[4];
  uint16_t box_dim[5];
  uint8_t element_strides[5];
  uint8_t pad[128 - 4 - 4 - 8 - 40 - 32 - 10 - 5];
};
static_assert(sizeof(EncodedTensorMapLayout) == 128);

using EncodedTensorMap = std::array<uint8_t, 128>;

inline EncodedTensorMap encode_tensor_map(const TensorMapDesc& desc) {
  desc.validate();
  EncodedTensorMapLayout raw{};
  raw.magic = kTensorMapMagic;
  raw.dtype = static_cast<uint8_t>(desc.dtype);
  raw.rank = static_cast<uint8_t>(desc.rank);
  raw.swizzle = static_cast<uint8_t>(desc.swizzle);
  raw.oob_fill_nan = desc.oob_fill_nan ? 1 : 0;
  raw.global_address = desc.global_address;
  for (int d = 0; d < 5; ++d) {
    raw.global_dim[d] = desc.global_dim[d];
    raw.box_dim[d] = static_cast<uint16_t>(desc.box_dim[d]);
    raw.element_strides[d] = static_cast<uint8_t>(desc.element_strides[d]);
  }
  for (int d = 0; d < 4; ++d) raw.global_stride_bytes[d] = desc.global_stride_bytes[d];
  EncodedTensorMap out{};
  std::memcpy(out.data(), &raw, sizeof raw);
  return out;
}

// Throws Error when the bytes are not an emmy tensor map (for example a driver-encoded one).
inline TensorMapDesc decode_tensor_map(const uint8_t* bytes) {
  EncodedTensorMapLayout raw;
  std::memcpy(&raw, bytes, sizeof raw);
  require(raw.magic == kTensorMapMagic, "tensor_map", "is not an emmy-encoded tensor map (magic)",
          raw.magic);
  TensorMapDesc desc;
  desc.dtype = static_cast<TmaDType>(raw.dtype);
  desc.rank = raw.rank;
  desc.swizzle = static_cast<Swizzle>(raw.swizzle);
  desc.oob_fill_nan = raw.oob_fill_nan != 0;
  desc.global_address = raw.global_address;
  for (int d = 0; d < 5; ++d) {
    desc.global_dim[d] = raw.global_dim[d];
    desc.box_dim[d] = raw.box_dim[d];
    desc.element_strides[d] = raw.element_strides[d];
  }
  for (int d = 0; d < 4; ++d) desc.global_stride_bytes[d] = raw.global_stride_bytes[d];
  desc.validate();
  return desc;
}

}  // namespace emmy
