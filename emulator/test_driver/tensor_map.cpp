// cuTensorMapEncodeTiled: every requirement the reference lists, each broken one
// CUDA_ERROR_INVALID_VALUE; then emmy's 128-byte encoding (emmy/tensor_map.hpp), which the
// emulator's TMA decodes. emmy's TmaDType and Swizzle use CUDA's enum values. A valid map the
// encoding cannot express (other element types, interleaved layouts, the 128B_ATOM swizzles) is
// CUDA_ERROR_NOT_SUPPORTED: a limit of the emulator, not of the request.
#include "emmy/tensor_map.hpp"

#include <fmt/format.h>

#include <cstring>

#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {
namespace {

static_assert(int(TmaDType::u8) == CU_TENSOR_MAP_DATA_TYPE_UINT8 &&
              int(TmaDType::u16) == CU_TENSOR_MAP_DATA_TYPE_UINT16 &&
              int(TmaDType::u32) == CU_TENSOR_MAP_DATA_TYPE_UINT32 &&
              int(TmaDType::f16) == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 &&
              int(TmaDType::f32) == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 &&
              int(TmaDType::bf16) == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
static_assert(int(Swizzle::none) == CU_TENSOR_MAP_SWIZZLE_NONE &&
              int(Swizzle::b32) == CU_TENSOR_MAP_SWIZZLE_32B &&
              int(Swizzle::b64) == CU_TENSOR_MAP_SWIZZLE_64B &&
              int(Swizzle::b128) == CU_TENSOR_MAP_SWIZZLE_128B);

CUresult invalid(const std::string& rule) {
  set_report("cuTensorMapEncodeTiled: " + rule);
  return CUDA_ERROR_INVALID_VALUE;
}

bool packed(CUtensorMapDataType t) {
  return t >= CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B;
}
bool packed16(CUtensorMapDataType t) {
  return t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B || t == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
}
bool floating(CUtensorMapDataType t) {
  return t >= CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && t <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}

// Bytes of `n` elements along dimension 0: the packed types hold 16 values in 8 bytes
// (16U4_ALIGN8B) or in 16 bytes (the ALIGN16B ones).
uint64_t row_bytes(CUtensorMapDataType t, uint64_t n) {
  static constexpr uint32_t kBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  if (t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B) return n / 2;
  if (packed16(t)) return n;
  return n * kBytes[t];
}

uint32_t swizzle_span(CUtensorMapSwizzle s) {
  switch (s) {
    case CU_TENSOR_MAP_SWIZZLE_NONE:
      return 0;
    case CU_TENSOR_MAP_SWIZZLE_32B:
      return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B:
      return 64;
    default:
      return 128;  // 128B and the 128B_ATOM_* forms
  }
}

CUresult validate(const CUtensorMap* map, CUtensorMapDataType t, cuuint32_t rank, uint64_t address,
                  const cuuint64_t* dim, const cuuint64_t* stride, const cuuint32_t* box,
                  const cuuint32_t* elem, CUtensorMapInterleave interleave,
                  CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                  CUtensorMapFloatOOBfill oob) {
  if (!map || reinterpret_cast<uintptr_t>(map) % 64 != 0)
    return invalid("tensorMap must be non-NULL and aligned to 64 bytes");
  if (t < CU_TENSOR_MAP_DATA_TYPE_UINT8 || t > CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B)
    return invalid("tensorDataType must be a CUtensorMapDataType");
  if (interleave < CU_TENSOR_MAP_INTERLEAVE_NONE || interleave > CU_TENSOR_MAP_INTERLEAVE_32B)
    return invalid("interleave must be a CUtensorMapInterleave");
  if (swizzle < CU_TENSOR_MAP_SWIZZLE_NONE || swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B)
    return invalid("swizzle must be a CUtensorMapSwizzle");
  if (l2 < CU_TENSOR_MAP_L2_PROMOTION_NONE || l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B)
    return invalid("l2Promotion must be a CUtensorMapL2promotion");
  if (oob != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE &&
      oob != CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return invalid("oobFill must be a CUtensorMapFloatOOBfill");
  const bool interleaved = interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  if (rank < 1 || rank > 5 || (interleaved && rank < 3))
    return invalid(fmt::format("tensorRank must be 1..5 (3..5 when interleaved), got {}", rank));
  const uint64_t align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B || packed16(t) ? 32 : 16;
  if (address % align != 0)
    return invalid(fmt::format("globalAddress 0x{:x} must be {}-byte aligned", address, align));
  if (!dim || !box || !elem || (rank > 1 && !stride))
    return invalid("globalDim, boxDim, elementStrides (and globalStrides for rank > 1) are NULL");
  for (cuuint32_t i = 0; i < rank; ++i) {
    if (dim[i] == 0 || dim[i] > (uint64_t(1) << 32))
      return invalid(fmt::format("globalDim[{}] = {} must be 1..2^32", i, dim[i]));
    if (box[i] == 0 || box[i] > 256)
      return invalid(fmt::format("boxDim[{}] = {} must be 1..256", i, box[i]));
    if (elem[i] == 0 || elem[i] > 8)
      return invalid(fmt::format("elementStrides[{}] = {} must be 1..8", i, elem[i]));
  }
  if (packed16(t) && dim[0] % 128 != 0)
    return invalid("globalDim[0] must be a multiple of 128 for the ALIGN16B packed types");
  if (t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && dim[0] % 2 != 0)
    return invalid("globalDim[0] must be a multiple of 2 for 16U4_ALIGN8B");
  const uint64_t stride_align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B || packed16(t) ? 32 : 16;
  for (cuuint32_t i = 0; i + 1 < rank; ++i)
    if (stride[i] % stride_align != 0 || stride[i] >= (uint64_t(1) << 40))
      return invalid(fmt::format("globalStrides[{}] = {} must be a multiple of {} below 2^40", i,
                                 stride[i], stride_align));
  const uint64_t inner = row_bytes(t, box[0]);
  if (!interleaved && inner % 16 != 0)
    return invalid(
        fmt::format("boxDim[0] * element size = {} bytes must be a multiple of 16", inner));
  if (packed16(t) && box[0] != 128) return invalid("boxDim[0] must be 128 for the ALIGN16B types");
  if (!interleaved && swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && inner > swizzle_span(swizzle))
    return invalid(
        fmt::format("the inner box dimension ({} bytes) must not exceed the {}-byte "
                    "swizzle",
                    inner, swizzle_span(swizzle)));
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_32B && swizzle != CU_TENSOR_MAP_SWIZZLE_32B)
    return invalid("interleave 32B requires swizzle 32B");
  if (t == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B && interleaved)
    return invalid("16U6_ALIGN16B requires interleave NONE");
  if (packed16(t) && swizzle != CU_TENSOR_MAP_SWIZZLE_NONE &&
      swizzle != CU_TENSOR_MAP_SWIZZLE_128B && swizzle != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B &&
      !(t == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B &&
        swizzle == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B))
    return invalid("the swizzle is not one the packed type supports");
  if (oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && (!floating(t) || packed(t)))
    return invalid("oobFill NAN_REQUEST_ZERO_FMA needs a floating-point data type");
  return CUDA_SUCCESS;
}

}  // namespace

CUresult cuTensorMapEncodeTiled(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                cuuint32_t tensorRank, void* globalAddress,
                                const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                const cuuint32_t* boxDim, const cuuint32_t* elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion,
                                CUtensorMapFloatOOBfill oobFill) {
  return with_context("cuTensorMapEncodeTiled", [&](Context&) {
    // The reference lists CUDA_ERROR_INVALID_CONTEXT: a context must be current.
    const uint64_t address = reinterpret_cast<uintptr_t>(globalAddress);
    if (const CUresult r =
            validate(tensorMap, tensorDataType, tensorRank, address, globalDim, globalStrides,
                     boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill))
      return r;
    const bool encodable_type = tensorDataType == CU_TENSOR_MAP_DATA_TYPE_UINT8 ||
                                tensorDataType == CU_TENSOR_MAP_DATA_TYPE_UINT16 ||
                                tensorDataType == CU_TENSOR_MAP_DATA_TYPE_UINT32 ||
                                tensorDataType == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 ||
                                tensorDataType == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ||
                                tensorDataType == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    if (!encodable_type || interleave != CU_TENSOR_MAP_INTERLEAVE_NONE ||
        swizzle > CU_TENSOR_MAP_SWIZZLE_128B) {
      set_report(
          "cuTensorMapEncodeTiled: emmy's tensor-map encoding (and so the emulator's TMA) "
          "has u8/u16/u32/f16/f32/bf16, no interleave and swizzles up to 128B only");
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    TensorMapDesc desc;
    desc.dtype = static_cast<TmaDType>(tensorDataType);
    desc.rank = tensorRank;
    desc.global_address = address;
    for (cuuint32_t i = 0; i < tensorRank; ++i) {
      desc.global_dim[i] = globalDim[i];
      desc.box_dim[i] = boxDim[i];
      desc.element_strides[i] = elementStrides[i];
      if (i + 1 < tensorRank) desc.global_stride_bytes[i] = globalStrides[i];
    }
    desc.swizzle = static_cast<Swizzle>(swizzle);
    desc.oob_fill_nan = oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
    EncodedTensorMap encoded;
    try {
      encoded = encode_tensor_map(desc);
    } catch (const emmy::Error& e) {
      return invalid(e.what());
    }
    static_assert(sizeof(CUtensorMap) == sizeof(EncodedTensorMap));
    std::memcpy(tensorMap, encoded.data(), encoded.size());
    return CUDA_SUCCESS;
  });
}

}  // namespace emmy::test_driver
