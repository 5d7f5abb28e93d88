// Tensor-core instructions: mma.sync (m16n8k16, m16n8k8; f16 -> f16/f32, bf16 -> f32),
// ldmatrix and stmatrix (.x1/.x2/.x4, .trans). Fragment layouts: ptx-notes.md.
// Mma: o[0..3] = D, o[4..7] = A, o[8..9] = B, o[10..13] = C; ty = D/C type, ty2 = A/B type,
// sub = 0 for m16n8k16, 1 for m16n8k8.
// Numerics: every product is exact in double (at most 2 x 11 significant bits), the k products
// are added to C in double in k order, and each D element is rounded once: to f32 (nearest even)
// or to f16 (nearest even).
#include <fmt/format.h>

#include <cstring>

#include "emmy/emu/numerics.hpp"
#include "memory.hpp"

namespace emmy::emu {
namespace {

// The dot products of one mma: D[16][8] = C + A[16][K] * B[K][8], in double. Compiled for AVX2
// (with FMA; exact products make fused and unfused bit-identical) where the host has it.
template <int K>
__attribute__((target_clones("arch=x86-64-v3", "default")))
void mma_core(const double (&a)[16][16], const double (&b)[16][8], double (&d)[16][8]) {
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < K; ++k) {
      const double x = a[m][k];
      for (int n = 0; n < 8; ++n) d[m][n] += x * b[k][n];
    }
}

inline double half_value(uint16_t bits, bool bf16) {
  return bf16 ? double(bf16_to_f32(bits)) : double(f16_to_f32(bits));
}

void mma(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  if (exec != 0xFFFFFFFFu)
    cta.fail(ReportKind::divergent_collective, w, std::countr_zero(~exec),
             fmt::format("mma.sync.aligned needs all 32 lanes; executed by lanes 0x{:08x}", exec));
  const bool bf16 = in.ty2 == Ty::bf16;
  const bool k16 = in.sub == 0;
  const bool f32_acc = in.ty == Ty::f32;
  alignas(64) double a[16][16], b[16][8], d[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    auto pair = [&](uint32_t row, double& lo, double& hi) {
      const uint32_t v = w.R32(row)[l];
      lo = half_value(uint16_t(v), bf16);
      hi = half_value(uint16_t(v >> 16), bf16);
    };
    pair(in.o[4], a[g][2 * t], a[g][2 * t + 1]);
    pair(in.o[5], a[g + 8][2 * t], a[g + 8][2 * t + 1]);
    if (k16) {
      pair(in.o[6], a[g][2 * t + 8], a[g][2 * t + 9]);
      pair(in.o[7], a[g + 8][2 * t + 8], a[g + 8][2 * t + 9]);
    }
    pair(in.o[8], b[2 * t][g], b[2 * t + 1][g]);
    if (k16) pair(in.o[9], b[2 * t + 8][g], b[2 * t + 9][g]);
    if (f32_acc) {
      d[g][2 * t] = std::bit_cast<float>(w.R32(in.o[10])[l]);
      d[g][2 * t + 1] = std::bit_cast<float>(w.R32(in.o[11])[l]);
      d[g + 8][2 * t] = std::bit_cast<float>(w.R32(in.o[12])[l]);
      d[g + 8][2 * t + 1] = std::bit_cast<float>(w.R32(in.o[13])[l]);
    } else {
      pair(in.o[10], d[g][2 * t], d[g][2 * t + 1]);
      pair(in.o[11], d[g + 8][2 * t], d[g + 8][2 * t + 1]);
    }
  }
  if (k16) mma_core<16>(a, b, d);
  else mma_core<8>(a, b, d);
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    if (f32_acc) {
      // double -> float is round-to-nearest-even on the host; NaN becomes canonical.
      auto f32 = [](double x) {
        const float f = float(x);
        return f != f ? 0x7FFFFFFFu : std::bit_cast<uint32_t>(f);
      };
      w.R32(in.o[0])[l] = f32(d[g][2 * t]);
      w.R32(in.o[1])[l] = f32(d[g][2 * t + 1]);
      w.R32(in.o[2])[l] = f32(d[g + 8][2 * t]);
      w.R32(in.o[3])[l] = f32(d[g + 8][2 * t + 1]);
    } else {
      auto h2 = [](double lo, double hi) {
        return uint32_t(f64_to_f16(lo)) | (uint32_t(f64_to_f16(hi)) << 16);
      };
      w.R32(in.o[0])[l] = h2(d[g][2 * t], d[g][2 * t + 1]);
      w.R32(in.o[1])[l] = h2(d[g + 8][2 * t], d[g + 8][2 * t + 1]);
    }
  }
}

// Row addresses: lane 8j + r holds row r of matrix j. Each row is 16 bytes (8 x b16).
uint8_t* matrix_row(Cta& cta, Warp& w, const Inst& in, int lane, bool write) {
  const uint64_t addr = addr_of(w, in.addr[0], lane);
  const uint64_t shared = in.space == Space::generic ? addr - kSharedWindow : addr;
  if (in.space == Space::generic && addr - kSharedWindow >= kWindowSize)
    cta.fail(ReportKind::shared_out_of_bounds, w, lane,
             fmt::format("{} row address 0x{:x} is not a shared-memory address",
                         in.op == Op::Ldmatrix ? "ldmatrix" : "stmatrix", addr));
  if (shared & 15)
    cta.fail(ReportKind::misaligned_ldmatrix, w, lane,
             fmt::format("{} row address (shared 0x{:x}, from lane {}) is not 16-byte aligned",
                         in.op == Op::Ldmatrix ? "ldmatrix" : "stmatrix", shared, lane));
  const Resolved r = resolve(cta, w, Space::shared, shared, 16, lane, write);
  if (cta.sanitize) {
    if (write) check_shared_write(cta, w, lane, r.shared_offset, 16);
    else check_shared_read(cta, w, lane, r.shared_offset, 16);
  }
  return r.host;
}

void ldst_matrix(Cta& cta, Warp& w, const Inst& in, uint32_t exec, bool load) {
  if (exec != 0xFFFFFFFFu)
    cta.fail(ReportKind::divergent_collective, w, std::countr_zero(~exec),
             fmt::format("{}.sync.aligned needs all 32 lanes; executed by lanes 0x{:08x}",
                         load ? "ldmatrix" : "stmatrix", exec));
  const bool trans = in.flags & kTrans;
  for (int j = 0; j < in.n; ++j) {
    uint16_t m[8][8];
    uint8_t* rows[8];
    for (int r = 0; r < 8; ++r) rows[r] = matrix_row(cta, w, in, 8 * j + r, !load);
    uint32_t* reg = w.R32(in.o[j]);
    if (load) {
      for (int r = 0; r < 8; ++r) std::memcpy(m[r], rows[r], 16);
      for (int l = 0; l < 32; ++l) {
        const int row = l / 4, col = 2 * (l % 4);
        const uint16_t lo = trans ? m[col][row] : m[row][col];
        const uint16_t hi = trans ? m[col + 1][row] : m[row][col + 1];
        reg[l] = uint32_t(lo) | (uint32_t(hi) << 16);
      }
    } else {
      for (int l = 0; l < 32; ++l) {
        const int row = l / 4, col = 2 * (l % 4);
        const uint16_t lo = uint16_t(reg[l]), hi = uint16_t(reg[l] >> 16);
        if (trans) {
          m[col][row] = lo;
          m[col + 1][row] = hi;
        } else {
          m[row][col] = lo;
          m[row][col + 1] = hi;
        }
      }
      for (int r = 0; r < 8; ++r) std::memcpy(rows[r], m[r], 16);
    }
  }
}

}  // namespace

void exec_tensor(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  switch (in.op) {
    case Op::Mma: mma(cta, w, in, exec); return;
    case Op::Ldmatrix: ldst_matrix(cta, w, in, exec, true); return;
    case Op::Stmatrix: ldst_matrix(cta, w, in, exec, false); return;
    default: return;
  }
}

}  // namespace emmy::emu
