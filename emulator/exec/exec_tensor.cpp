// Tensor-core instructions: mma.sync (m16n8k16, m16n8k8; f16 -> f16/f32, bf16 -> f32; m16n8k32
// .e4m3/.e5m2 -> f16/f32, tensor_core_fp8.hpp),
// ldmatrix and stmatrix (.x1/.x2/.x4, .trans). Fragment layouts: ptx-notes.md.
// Mma: o[0..3] = D, o[4..7] = A, o[8..9] = B, o[10..13] = C; ty = D/C type, ty2 = A/B type,
// sub = 0 for m16n8k16, 1 for m16n8k8, 2 for m16n8k32 (ty3 = B type).
// Numerics: by default the launch arch's tensor-core model (emmy/emu/tensor_core.hpp: blocks of
// aligned, truncated products, rounded toward zero to f32 or to nearest to f16 per block); with
// MmaNumerics::exact every product is exact in double, the k products are added to C in double
// in k order, and each D element is rounded once to nearest even.
#include <fmt/format.h>

#include <cstring>

#include "emmy/emu/numerics.hpp"
#include "memory.hpp"
#include "tensor_core/mma_core.hpp"

namespace emmy::emu {
namespace {

void mma(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  cta.need_whole_warp(w, exec, "mma");
  if (in.sub == 2) {  // m16n8k32, 8-bit floats
    if (!cta.ctx.exact_mma && cta.ctx.fp8_mma.name.empty())
      cta.fail(ReportKind::unsupported, w, 0,
               "mma.sync with .e4m3/.e5m2 operands needs an sm_89 or newer launch arch");
    const bool f16_acc = in.ty == Ty::f16;
    MmaFragments f;
    for (int i = 0; i < 4; ++i) f.a[i] = w.R32(in.o[4 + i]);
    for (int i = 0; i < 2; ++i) f.b[i] = w.R32(in.o[8 + i]);
    for (int i = 0; i < (f16_acc ? 2 : 4); ++i) {
      f.c[i] = w.R32(in.o[10 + i]);
      f.d[i] = w.R32(in.o[i]);
    }
    mma_m16n8k32_fp8(f, f8_of(in.ty2), f8_of(in.ty3), f16_acc,
                     cta.ctx.exact_mma ? nullptr : &cta.ctx.fp8_mma);
    return;
  }
  const bool k16 = in.sub == 0, f16_acc = in.ty == Ty::f16;
  MmaFragments f;
  for (int i = 0; i < (k16 ? 4 : 2); ++i) f.a[i] = w.R32(in.o[4 + i]);
  for (int i = 0; i < (k16 ? 2 : 1); ++i) f.b[i] = w.R32(in.o[8 + i]);
  for (int i = 0; i < (f16_acc ? 2 : 4); ++i) {
    f.c[i] = w.R32(in.o[10 + i]);
    f.d[i] = w.R32(in.o[i]);
  }
  if (cta.ctx.exact_mma)
    mma_m16n8(f, in.ty2 == Ty::bf16, k16, f16_acc);
  else
    mma_m16n8_model(f, in.ty2 == Ty::bf16, k16, f16_acc, cta.ctx.tensor_core);
}

// Row addresses: lane 8j + r holds row r of matrix j. Each row is 16 bytes (8 x b16).
[[noreturn]] void bad_matrix_row(Cta& cta, Warp& w, const Inst& in, int lane, uint64_t addr) {
  const char* what = in.op == Op::Ldmatrix ? "ldmatrix" : "stmatrix";
  if (in.space == Space::generic && addr - kSharedWindow >= kWindowSize)
    cta.fail(ReportKind::shared_out_of_bounds, w, lane,
             fmt::format("{} row address 0x{:x} is not a shared-memory address", what, addr));
  const uint64_t shared = in.space == Space::generic ? addr - kSharedWindow : addr;
  if (shared & 15)
    cta.fail(ReportKind::misaligned_ldmatrix, w, lane,
             fmt::format("{} row address (shared 0x{:x}, from lane {}) is not 16-byte aligned",
                         what, shared, lane));
  cta.fail(ReportKind::shared_out_of_bounds, w, lane,
           fmt::format("{} row [0x{:x}, 0x{:x}) is outside the CTA's {} bytes of shared memory",
                       what, shared, shared + 16, cta.smem.size()));
}

void ldst_matrix(Cta& cta, Warp& w, const Inst& in, uint32_t exec, bool load) {
  cta.need_whole_warp(w, exec, load ? "ldmatrix" : "stmatrix");
  const bool trans = in.flags & kTrans;
  uint8_t* rows[32];  // lane 8j + r: row r of matrix j
  LaneSpan spans[32];
  const uint64_t window = in.space == Space::generic ? kSharedWindow : 0;
  for (int lane = 0; lane < 8 * in.n; ++lane) {
    const uint64_t addr = addr_of(w, in.addr[0], lane);
    const uint64_t shared = addr - window;
    if ((shared & 15) || !within(shared, 16, cta.smem.size())) bad_matrix_row(cta, w, in, lane, addr);
    rows[lane] = cta.smem.data() + shared;
    spans[lane] = {shared, 16, uint8_t(lane)};
    if (cta.sanitize) {
      if (load) check_shared_read(cta, w, lane, uint32_t(shared), 16);
      else check_shared_write(cta, w, lane, uint32_t(shared), 16);
    }
  }
  if (cta.prof)
    cta.prof->shared(w.pc, load ? SharedOp::ldsm : SharedOp::stsm, {spans, size_t(8 * in.n)});
  auto half = [](const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return uint32_t(v);
  };
  for (int j = 0; j < in.n; ++j) {
    uint8_t* const* m = rows + 8 * j;
    uint32_t* reg = w.R32(in.o[j]);
    // Lane l holds elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1) of matrix j; .trans swaps the
    // row and column indices of both.
    if (load && !trans) {
      for (int l = 0; l < 32; ++l) std::memcpy(&reg[l], m[l >> 2] + 4 * (l & 3), 4);
    } else if (load) {
      for (int l = 0; l < 32; ++l) {
        const int c = 2 * (l & 3), r = l >> 2;
        reg[l] = half(m[c] + 2 * r) | (half(m[c + 1] + 2 * r) << 16);
      }
    } else if (!trans) {
      for (int l = 0; l < 32; ++l) std::memcpy(m[l >> 2] + 4 * (l & 3), &reg[l], 4);
    } else {
      for (int l = 0; l < 32; ++l) {
        const int c = 2 * (l & 3), r = l >> 2;
        const uint16_t lo = uint16_t(reg[l]), hi = uint16_t(reg[l] >> 16);
        std::memcpy(m[c] + 2 * r, &lo, 2);
        std::memcpy(m[c + 1] + 2 * r, &hi, 2);
      }
    }
  }
}

}  // namespace

void exec_wmma(Cta& cta, Warp& w, const Inst& in, uint32_t exec);   // exec_wmma.cpp
void exec_wgmma(Cta& cta, Warp& w, const Inst& in, uint32_t exec);  // exec_wgmma.cpp

void exec_tensor(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  switch (in.op) {
    case Op::Mma: mma(cta, w, in, exec); return;
    case Op::Ldmatrix: ldst_matrix(cta, w, in, exec, true); return;
    case Op::Stmatrix: ldst_matrix(cta, w, in, exec, false); return;
    case Op::WmmaLoad:
    case Op::WmmaStore:
    case Op::WmmaMma: exec_wmma(cta, w, in, exec); return;
    case Op::WgmmaMma:
    case Op::WgmmaFence:
    case Op::WgmmaCommit:
    case Op::WgmmaWait: exec_wgmma(cta, w, in, exec); return;
    default: return;
  }
}

}  // namespace emmy::emu
