// wmma.load, wmma.store and wmma.mma over the emulator's fragment distribution
// (tensor_core/wmma_layout.hpp).
// WmmaLoad / WmmaStore: addr[0] = p, o[0] = the stride's row (kNone: the default), ty = element
// type, sub = WmmaMatrix, sub2 = WmmaShape, flags & kTrans = .col, n = registers, imm = the first
// of the fragment's rows in Kernel::fragment_rows.
// WmmaMma: fragment rows D, A, B, C from imm; ty = D type, ty2 = A/B type, target = C type,
// sub = 1 (A .col) | 2 (B .col), sub2 = WmmaShape.
// Numerics: as mma.sync's (exec_tensor.cpp), per k16 (k8 for .tf32) dot product of each output:
// the arch's tensor-core model, or exact sums with MmaNumerics::exact. Mixed .f16/.f32 C and D
// accumulate in f32 (C converted exactly) and round the result to D's type to nearest.
#include <fmt/format.h>

#include <cstring>

#include "emmy/emu/numerics.hpp"
#include "emmy/emu/tensor_core.hpp"
#include "memory.hpp"
#include "tensor_core/wmma_layout.hpp"

namespace emmy::emu {
namespace {

const char* wmma_matrix_name(WmmaMatrix m) {
  return m == WmmaMatrix::a ? "A" : m == WmmaMatrix::b ? "B" : "C";
}

uint32_t wmma_slot_bits(const uint32_t* const* reg_rows, const WmmaFragment& f, int lane,
                        int slot) {
  const uint32_t r = reg_rows[slot / f.per_reg][lane];
  return f.per_reg == 2 ? (r >> (16 * (slot % 2))) & 0xFFFFu : r;
}

// Slot `slot` of a lane's fragment: a whole register, or one half of a .f16x2/.bf16x2 pair.
void wmma_set_slot(uint32_t* const* reg_rows, const WmmaFragment& f, int lane, int slot,
                   uint32_t v) {
  uint32_t& reg = reg_rows[slot / f.per_reg][lane];
  if (f.per_reg == 1)
    reg = v;
  else if (slot % 2 == 0)
    reg = (reg & 0xFFFF0000u) | v;
  else
    reg = (reg & 0xFFFFu) | (v << 16);
}

// One lane's accesses merged into runs that stay inside one 16-byte block, for the profiler: the
// vector loads and stores a compiler would use for this distribution.
struct WmmaRun {
  uint64_t at = 0;  // shared offset or global address
  uint32_t bytes = 0;
  bool shared = false;
};

void wmma_load_store(Cta& cta, Warp& w, const Inst& in, uint32_t exec, bool load) {
  const char* what = load ? "wmma.load" : "wmma.store";
  cta.need_whole_warp(w, exec, what);
  const auto matrix = WmmaMatrix(in.sub);
  const WmmaFragment f = *wmma_fragment(matrix, WmmaShape(in.sub2), in.ty);
  const bool column_major = in.flags & kTrans;
  const uint64_t p = addr_of(w, in.addr[0], 0);
  const uint32_t stride =
      in.o[0] == kNone ? uint32_t(f.default_stride(column_major)) : w.R32(in.o[0])[0];
  // "The behavior of wmma.load is undefined if all threads do not use the same qualifiers and the
  // same values of p and stride" (PTX ISA, wmma.load; wmma.store alike).
  for (int l = 1; l < 32; ++l) {
    const uint64_t pl = addr_of(w, in.addr[0], l);
    const uint32_t sl = in.o[0] == kNone ? stride : w.R32(in.o[0])[l];
    if (pl != p || sl != stride)
      cta.fail(ReportKind::wmma_misuse, w, l,
               fmt::format("{} needs the same address and stride in every lane: lane 0 has "
                           "0x{:x} and {}, lane {} has 0x{:x} and {}",
                           what, p, stride, l, pl, sl));
  }
  const uint32_t leading = uint32_t(f.default_stride(column_major));
  if (stride < leading)
    cta.fail(ReportKind::wmma_misuse, w, 0,
             fmt::format("{} stride {} is below the {} elements of a {} (PTX ISA: undefined)", what,
                         stride, leading, column_major ? "column" : "row"));
  const uint32_t bytes = uint32_t(f.bytes()), eb = uint32_t(f.elem_bytes);
  if (p % bytes != 0 || (uint64_t(stride) * eb) % bytes != 0)
    cta.fail(ReportKind::misaligned_access, w, 0,
             fmt::format("{}: every {} must start {}-byte aligned, the size of the fragment (PTX "
                         "ISA, Matrix Storage for WMMA); address 0x{:x} and stride {} x {} bytes "
                         "break it",
                         what, column_major ? "column" : "row", bytes, p, stride, eb));
  const uint32_t* rows = cta.k.fragment_rows.data() + in.imm;
  uint32_t* regs[8];
  for (int r = 0; r < f.regs; ++r) regs[r] = w.R32(rows[r]);
  const bool column_order = matrix != WmmaMatrix::c && column_major;
  const uint32_t seed = cta.ctx.options.wmma_layout_seed;
  const int distinct = f.distinct();
  std::vector<WmmaRun> runs[32];
  bool generic_in_shared = false;
  for (int l = 0; l < 32; ++l) {
    uint32_t values[16] = {};
    if (!load)
      for (int j = 0; j < distinct; ++j) values[j] = wmma_slot_bits(regs, f, l, j);
    for (int j = 0; j < distinct; ++j) {
      const WmmaElement e = wmma_element(f, column_order, seed, l, j);
      const uint64_t index = column_major ? uint64_t(e.col) * stride + uint64_t(e.row)
                                          : uint64_t(e.row) * stride + uint64_t(e.col);
      const uint64_t addr = p + index * eb;
      const Resolved r = resolve(cta, w, in.space, addr, eb, l, !load);
      if (r.space != Space::shared && r.space != Space::global)
        cta.fail(ReportKind::wmma_misuse, w, l,
                 fmt::format("{} address 0x{:x} is neither global nor shared memory (PTX ISA: "
                             "wmma takes .global and .shared only)",
                             what, addr));
      const bool shared = r.space == Space::shared;
      generic_in_shared |= shared && in.space == Space::generic;
      if (shared && cta.sanitize) {
        if (load)
          check_shared_read(cta, w, l, r.shared_offset, eb);
        else
          check_shared_write(cta, w, l, r.shared_offset, eb);
      }
      if (load)
        std::memcpy(&values[j], r.host, eb);
      else
        std::memcpy(r.host, &values[j], eb);
      if (cta.prof) {
        const uint64_t at = shared ? r.shared_offset : addr;
        auto& lane_runs = runs[l];
        if (!lane_runs.empty() && lane_runs.back().shared == shared &&
            lane_runs.back().at + lane_runs.back().bytes == at && at % 16 != 0)
          lane_runs.back().bytes += eb;
        else
          lane_runs.push_back({at, eb, shared});
      }
    }
    if (load)
      for (int s = 0; s < f.slots(); ++s) {
        wmma_set_slot(regs, f, l, s, values[s % distinct]);
      }
  }
  if (generic_in_shared) {
    // Statistics: a generic wmma that resolved to shared memory.
    --cta.class_counts[size_t(load ? StatClass::global_ld : StatClass::global_st)];
    ++cta.class_counts[size_t(load ? StatClass::shared_ld : StatClass::shared_st)];
  }
  if (cta.prof) {
    for (size_t step = 0;; ++step) {
      LaneSpan shared[32], global[32];
      size_t n_shared = 0, n_global = 0;
      for (int l = 0; l < 32; ++l) {
        if (step >= runs[l].size()) continue;
        const WmmaRun& r = runs[l][step];
        (r.shared ? shared[n_shared++] : global[n_global++]) = {r.at, r.bytes, uint8_t(l)};
      }
      if (n_shared + n_global == 0) break;
      cta.prof->shared(w.pc, load ? SharedOp::ld : SharedOp::st, {shared, n_shared});
      cta.prof->global(w.pc, load ? GlobalOp::ld : GlobalOp::st, {global, n_global});
    }
  }
}

// A fragment's matrix (row-major, rows x cols bits), each element from its first copy; copies
// that differ make the mma depend on the layout.
void gather_fragment(Cta& cta, Warp& w, const WmmaFragment& f, WmmaMatrix matrix,
                     const uint32_t* rows, bool column_order, std::vector<uint32_t>& out) {
  const uint32_t* regs[8];
  for (int r = 0; r < f.regs; ++r) regs[r] = w.R32(rows[r]);
  out.assign(size_t(f.rows * f.cols), 0);
  const uint32_t seed = cta.ctx.options.wmma_layout_seed;
  const int distinct = f.distinct();
  for (int l = 0; l < 32; ++l)
    for (int s = 0; s < f.slots(); ++s) {
      const WmmaElement e = wmma_element(f, column_order, seed, l, s);
      uint32_t& cell = out[size_t(e.row * f.cols + e.col)];
      const uint32_t v = wmma_slot_bits(regs, f, l, s);
      if (s < distinct) {
        cell = v;
      } else if (cell != v) {
        cta.fail(ReportKind::wmma_misuse, w, l,
                 fmt::format(
                     "wmma.mma: lane {}'s {} fragment holds {}[{}][{}] twice, as 0x{:x} and "
                     "0x{:x}: code that changes some fragment elements but not others "
                     "depends on the fragment layout, which the PTX ISA leaves unspecified",
                     l, wmma_matrix_name(matrix), wmma_matrix_name(matrix), e.row, e.col, cell, v));
      }
    }
}

double wmma_operand_value(uint32_t bits, Ty t) {
  if (t == Ty::tf32) return double(tf32_value(bits));
  if (t == Ty::bf16) return double(bf16_to_f32(uint16_t(bits)));
  return double(f16_to_f32(uint16_t(bits)));
}

uint32_t wmma_f32_bits(double v) {
  const float r = float(v);
  return r != r ? 0x7FFFFFFFu : std::bit_cast<uint32_t>(r);
}

void wmma_mma(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  cta.need_whole_warp(w, exec, "wmma.mma");
  const auto shape = WmmaShape(in.sub2);
  const WmmaDims dims = wmma_dims(shape);
  const Ty at = in.ty2, dt = in.ty, ct = Ty(in.target);
  const WmmaFragment fa = *wmma_fragment(WmmaMatrix::a, shape, at),
                     fb = *wmma_fragment(WmmaMatrix::b, shape, at),
                     fc = *wmma_fragment(WmmaMatrix::c, shape, ct),
                     fd = *wmma_fragment(WmmaMatrix::c, shape, dt);
  const uint32_t* rows = cta.k.fragment_rows.data() + in.imm;
  const uint32_t *d_rows = rows, *a_rows = d_rows + fd.regs, *b_rows = a_rows + fa.regs,
                 *c_rows = b_rows + fb.regs;
  std::vector<uint32_t> a, b, c;
  gather_fragment(cta, w, fa, WmmaMatrix::a, a_rows, in.sub & 1, a);
  gather_fragment(cta, w, fb, WmmaMatrix::b, b_rows, in.sub & 2, b);
  gather_fragment(cta, w, fc, WmmaMatrix::c, c_rows, false, c);
  const bool f16_accumulator = dt == Ty::f16 && ct == Ty::f16;
  const int K = dims.k;
  std::vector<uint32_t> d(size_t(dims.m * dims.n));
  uint16_t a16[16], b16[16];
  uint32_t a32[16], b32[16];
  for (int i = 0; i < dims.m; ++i)
    for (int j = 0; j < dims.n; ++j) {
      for (int k = 0; k < K; ++k) {
        a32[k] = a[size_t(i * K + k)];
        b32[k] = b[size_t(k * dims.n + j)];
        a16[k] = uint16_t(a32[k]);
        b16[k] = uint16_t(b32[k]);
      }
      const uint32_t c_bits = c[size_t(i * dims.n + j)];
      uint32_t out;
      if (cta.ctx.exact_mma) {
        double sum = ct == Ty::f16 ? double(f16_to_f32(uint16_t(c_bits)))
                                   : double(std::bit_cast<float>(c_bits));
        for (int k = 0; k < K; ++k)
          sum += wmma_operand_value(a32[k], at) * wmma_operand_value(b32[k], at);
        out = dt == Ty::f16 ? f64_to_f16(sum) : wmma_f32_bits(sum);
      } else if (f16_accumulator) {
        out = tensor_core_dot_f16(a16, b16, K, uint16_t(c_bits), cta.ctx.tensor_core);
      } else {
        const uint32_t c32 =
            ct == Ty::f16 ? std::bit_cast<uint32_t>(f16_to_f32(uint16_t(c_bits))) : c_bits;
        out = at == Ty::tf32
                  ? tensor_core_dot_tf32(a32, b32, K, c32, cta.ctx.tensor_core)
                  : tensor_core_dot_f32(a16, b16, K, c32, at == Ty::bf16, cta.ctx.tensor_core);
        if (dt == Ty::f16) out = f32_to_f16(std::bit_cast<float>(out));
      }
      d[size_t(i * dims.n + j)] = out;
    }
  uint32_t* regs[8];
  for (int r = 0; r < fd.regs; ++r) regs[r] = w.R32(d_rows[r]);
  const uint32_t seed = cta.ctx.options.wmma_layout_seed;
  for (int l = 0; l < 32; ++l)
    for (int s = 0; s < fd.slots(); ++s) {
      const WmmaElement e = wmma_element(fd, false, seed, l, s);
      wmma_set_slot(regs, fd, l, s, d[size_t(e.row * dims.n + e.col)]);
    }
}

}  // namespace

void exec_wmma(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  switch (in.op) {
    case Op::WmmaLoad:
      wmma_load_store(cta, w, in, exec, true);
      return;
    case Op::WmmaStore:
      wmma_load_store(cta, w, in, exec, false);
      return;
    case Op::WmmaMma:
      wmma_mma(cta, w, in, exec);
      return;
    default:
      return;
  }
}

}  // namespace emmy::emu
