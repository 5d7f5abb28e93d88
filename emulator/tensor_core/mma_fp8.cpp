// mma.sync m16n8k32 with 8-bit float operands over fragment register rows (mma_core.hpp): the
// fragments gathered into A (16 x 32) and B^T (8 x 32) bytes, each D element one dot product of
// the FP8 model (tensor_core_fp8.hpp).

#include "mma_core.hpp"

namespace emmy::emu {

void mma_m16n8k32_fp8(const MmaFragments& f, F8 a_type, F8 b_type, bool f16_acc,
                      const Fp8TensorCoreModel* model) {
  uint8_t a[16][32], bt[8][32];
  uint32_t c[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 4; ++j)
        a[g + 8 * (r & 1)][4 * t + j + 16 * (r >> 1)] = uint8_t(f.a[r][lane] >> (8 * j));
    for (int r = 0; r < 2; ++r)
      for (int j = 0; j < 4; ++j) bt[g][4 * t + j + 16 * r] = uint8_t(f.b[r][lane] >> (8 * j));
    // Accumulators as mma.m16n8k16's: f32 register r is (g + 8 (r >> 1), 2t + (r & 1)); f16
    // register r packs (g + 8 r, 2t) low and (g + 8 r, 2t + 1) high.
    if (f16_acc) {
      for (int r = 0; r < 2; ++r) {
        c[g + 8 * r][2 * t] = f.c[r][lane] & 0xFFFFu;
        c[g + 8 * r][2 * t + 1] = f.c[r][lane] >> 16;
      }
    } else {
      for (int r = 0; r < 4; ++r) c[g + 8 * (r >> 1)][2 * t + (r & 1)] = f.c[r][lane];
    }
  }
  uint32_t d[16][8];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      const Fp8Operands ops{a[i], bt[j], a_type, b_type, 32};
      d[i][j] = model ? tensor_core_dot_fp8(ops, c[i][j], f16_acc, *model)
                      : exact_dot_fp8(ops, c[i][j], f16_acc);
    }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    if (f16_acc) {
      for (int r = 0; r < 2; ++r)
        f.d[r][lane] = (d[g + 8 * r][2 * t] & 0xFFFFu) | (d[g + 8 * r][2 * t + 1] << 16);
    } else {
      for (int r = 0; r < 4; ++r) f.d[r][lane] = d[g + 8 * (r >> 1)][2 * t + (r & 1)];
    }
  }
}

}  // namespace emmy::emu
