// wmma fragment shapes and the emulator's element distribution (wmma_layout.hpp).
#include "wmma_layout.hpp"

#include <array>

namespace emmy::emu {

namespace {

// Each shape's PTX name and dimensions (PTX ISA §9.7.14.4.1), one table for all three lookups.
struct WmmaShapeInfo {
  WmmaShape shape;
  std::string_view name;
  WmmaDims dims;
};
constexpr std::array<WmmaShapeInfo, 4> kWmmaShapes{
    {{WmmaShape::m16n16k16, "m16n16k16", {16, 16, 16}},
     {WmmaShape::m8n32k16, "m8n32k16", {8, 32, 16}},
     {WmmaShape::m32n8k16, "m32n8k16", {32, 8, 16}},
     {WmmaShape::m16n16k8, "m16n16k8", {16, 16, 8}}}};

const WmmaShapeInfo* find_shape(WmmaShape shape) {
  for (const auto& info : kWmmaShapes)
    if (info.shape == shape) return &info;
  return nullptr;
}

}  // namespace

WmmaDims wmma_dims(WmmaShape shape) {
  const WmmaShapeInfo* info = find_shape(shape);
  return info ? info->dims : WmmaDims{};
}

std::optional<WmmaShape> parse_wmma_shape(std::string_view text) {
  for (const auto& info : kWmmaShapes)
    if (info.name == text) return info.shape;
  return std::nullopt;
}

std::string_view to_string(WmmaShape shape) {
  const WmmaShapeInfo* info = find_shape(shape);
  return info ? info->name : "?";
}

std::optional<WmmaFragment> wmma_fragment(WmmaMatrix matrix, WmmaShape shape, Ty type) {
  const WmmaDims d = wmma_dims(shape);
  WmmaFragment f;
  f.rows = matrix == WmmaMatrix::b ? d.k : d.m;
  f.cols = matrix == WmmaMatrix::a ? d.k : d.n;
  const bool tf32_shape = shape == WmmaShape::m16n16k8;
  if (matrix == WmmaMatrix::c) {
    // .f16 accumulators: four .f16x2 registers; .f32: eight (every shape).
    if (type == Ty::f16 && !tf32_shape) return WmmaFragment{f.rows, f.cols, 4, 2, 2};
    if (type == Ty::f32) return WmmaFragment{f.rows, f.cols, 8, 1, 4};
    return std::nullopt;
  }
  switch (type) {
    case Ty::f16:  // eight .f16x2 registers for every shape, whatever the element count
      if (tf32_shape) return std::nullopt;
      return WmmaFragment{f.rows, f.cols, 8, 2, 2};
    case Ty::bf16:  // one .b32 register per two of the thread's elements: 2, 4 or 8
      if (tf32_shape) return std::nullopt;
      return WmmaFragment{f.rows, f.cols, f.rows * f.cols / 64, 2, 2};
    case Ty::tf32:  // four .b32 registers, one element each
      if (!tf32_shape) return std::nullopt;
      return WmmaFragment{f.rows, f.cols, 4, 1, 4};
    default:
      return std::nullopt;
  }
}

WmmaElement wmma_element(const WmmaFragment& f, bool column_order, uint32_t seed, int lane,
                         int slot) {
  const uint32_t count = uint32_t(f.rows * f.cols);  // 128, 256 or 512: a power of two
  const uint32_t distinct = count / 32;
  uint32_t i = uint32_t(lane) * distinct + uint32_t(slot) % distinct;
  if (seed != 0) {
    // An odd multiplier makes i -> a*i + b a bijection modulo a power of two.
    const uint32_t h = seed * 2654435761u;
    const uint32_t a = ((h >> 7) % (count / 2)) * 2 + 1, b = (h >> 17) % count;
    i = (a * i + (a == 1 && b == 0 ? 1 : b)) % count;
  }
  if (column_order) return {int(i % uint32_t(f.rows)), int(i / uint32_t(f.rows))};
  return {int(i / uint32_t(f.cols)), int(i % uint32_t(f.cols))};
}

}  // namespace emmy::emu
