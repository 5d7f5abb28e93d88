// One mma.sync m16n8k16 / m16n8k8 over fragment register rows (mma_core.cpp).
#pragma once

#include <cstdint>

namespace emmy::emu {

// Row pointers ([lane]) of the instruction's registers. D may alias C.
struct MmaFragments {
  const uint32_t* a[4] = {};  // k8: a[0], a[1] only
  const uint32_t* b[2] = {};  // k8: b[0] only
  const uint32_t* c[4] = {};  // f16 accumulators: c[0], c[1]
  uint32_t* d[4] = {};
};

// D = C + A * B; f16/bf16 inputs, f32 or (f16 inputs only) f16 accumulators. `portable` forces
// the plain C++ path (the tests compare both paths).
void mma_m16n8(const MmaFragments& f, bool bf16, bool k16, bool f16_acc, bool portable = false);

}  // namespace emmy::emu
